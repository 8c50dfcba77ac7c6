//! The host binary's transform, judged from outside: fat binaries compiled by clang++-15 in
//! the test are split, then read back by `eu-elflint`, `readelf`, Python's msgpack and a stub
//! HIP runtime that the rewritten binaries really load and register with.

mod debian;
mod fat;
mod hostile;
mod mutations;
mod shapes;
mod support;
