//! Every shape of fat binary clang writes (shared object, PIE, fixed-address executable,
//! several units, `-fgpu-rdc`), split and loaded.

use std::fs::File;

use device_code::host::{self, FatState};

use crate::fat::{self, Shape};
use crate::support::{self, assert_no_new_complaints};

#[test]
fn every_shape_splits_and_registers_its_marker() {
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = fat::build_runtime(dir.path());
    for shape in Shape::ALL {
        let work = dir.path().join(format!("{shape:?}"));
        std::fs::create_dir(&work).expect("mkdir");
        let input = fat::build(shape, &work, &runtime);
        let before = fat::run_against_stub(&input, shape, &runtime);
        eprintln!("{shape:?} before:\n{before}");
        let output = work.join("split");
        let plan = support::transform(&input, &output, &support::reference("lib/libk.so"));
        let after = fat::run_against_stub(&output, shape, &runtime);
        eprintln!("{shape:?} after:\n{after}");
        assert_no_new_complaints(&input, &output);
        let again = host::inspect(&File::open(&output).expect("open"), &output).expect("inspect");
        assert_eq!(again.state(), FatState::AlreadySplit);
        eprintln!("removed {}", plan.removed_len());
    }
}
