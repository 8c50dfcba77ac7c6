//! Nothing here: this crate only holds the integration tests in `it/`.
