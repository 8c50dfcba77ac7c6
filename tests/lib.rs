//! What the integration tests (`it/`) and their helper program (`fault_child/`, which the
//! tests spawn when a run must happen in a process of its own) share: the example and a
//! packaging run's settings as the CLI makes them (`fixtures`), and small wheel specs
//! (`wheels`).

pub mod fixtures;
pub mod wheels;
