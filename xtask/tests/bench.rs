//! `cargo xtask bench` end to end on a tiny synthetic build: it generates the tree, packages
//! it in a child process, measures the floor, repairs a wheel built on the example SDK
//! (and runs auditwheel on it), and reports fields that make sense. No timing is asserted (speed lives in the command, not in the test suite).

use std::process::Command;

#[test]
fn bench_reports_sane_fields() {
    let work = tempfile::tempdir().expect("tempdir");
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["bench", "--size", "16MiB", "--alternate", "2", "--json", "--work-dir"])
        .arg(work.path())
        .output()
        .expect("run xtask bench");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "bench failed:\n{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let runs = report["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    let number = |pointer: &str| run.pointer(pointer).and_then(serde_json::Value::as_f64).expect(pointer);

    let payload = number("/input/payload_bytes");
    assert!(payload > 15.0 * 1048576.0 && payload < 18.0 * 1048576.0, "payload {payload}");
    assert!(number("/input/n_files") > 100.0);
    assert!(number("/input/n_symlinks") > 20.0);
    assert_eq!(number("/input/n_large_libraries"), 5.0);
    assert_eq!(run["package"]["success"], true, "{}", run["package"]["error"]);
    // Times are measured, not asserted: what can be checked is that each ratio and rate
    // below is the quotient of the times and sizes reported beside it (a field computed
    // from the wrong run, or left at zero, fails here).
    let wall = number("/package/wall_seconds");
    let cpu = number("/package/user_seconds") + number("/package/sys_seconds");
    assert!(wall.is_finite() && wall > 0.0 && cpu.is_finite() && cpu > 0.0, "wall {wall} cpu {cpu}");
    // The child's own peak, not ours: a packaging run needs a few MiB at least.
    assert!(number("/package/peak_rss_bytes") > 4.0 * 1048576.0);
    let dist = number("/dist_bytes");
    assert!(dist > 0.0 && dist < payload, "dist {dist} payload {payload}");
    // Each floor compressed every byte of the tree, to a smaller size: libdeflate's (the
    // floor), zlib-rs's (the earlier one) and stock zlib 6's (the size dist/ is held to).
    for floor in ["/libdeflate_floor", "/floor", "/zlib6"] {
        assert_eq!(number(&format!("{floor}/input_bytes")), payload, "{floor}");
        assert!(number(&format!("{floor}/compressed_bytes")) < payload, "{floor}");
    }
    let quotient = |pointer: &str, expected: f64| {
        let reported = number(pointer);
        assert!((reported - expected).abs() <= 1e-9 * expected.abs().max(1.0), "{pointer}: {reported} != {expected}");
    };
    quotient("/libdeflate_ratio", wall / number("/libdeflate_floor/wall_seconds").max(1e-9));
    quotient("/floor_ratio", wall / number("/floor/wall_seconds").max(1e-9));
    let gib = payload / f64::from(1u32 << 30);
    quotient("/seconds_per_gib", wall / gib);
    quotient("/cpu_seconds_per_gib", cpu / gib);
    assert!(run["libdeflate_floor"]["codec"].as_str().is_some_and(|codec| codec.starts_with("libdeflate 6")));
    assert!(run["zlib6"]["codec"].as_str().is_some_and(|codec| codec.starts_with("zlib 6")));
    let ideal = number("/ideal_floor_ratio");
    assert!(ideal.is_finite() && ideal > 0.0, "{ideal}");
    // The same quotient, up to the last bit JSON's decimal form may round.
    let dist_to_zlib6 = dist / number("/zlib6/compressed_bytes");
    assert!((number("/dist_to_zlib6") - dist_to_zlib6).abs() <= 1e-12 * dist_to_zlib6, "{dist_to_zlib6}");
    // `--alternate 2`: two more floors and cold runs, in turn, and their medians.
    let pairs = run["alternation"]["pairs"].as_array().expect("alternation pairs");
    assert_eq!(pairs.len(), 2);
    for pair in pairs {
        let field = |name: &str| pair[name].as_f64().unwrap_or_else(|| panic!("{name}: {pair}"));
        let ratio = field("package_wall_seconds") / field("floor_wall_seconds").max(1e-9);
        assert!((field("ratio") - ratio).abs() <= 1e-9 * ratio.max(1.0), "{pair}");
        assert!(field("cpu_ratio").is_finite() && field("cpu_ratio") > 0.0, "{pair}");
    }
    let ratios: Vec<f64> = pairs.iter().filter_map(|pair| pair["ratio"].as_f64()).collect();
    assert!((number("/alternation/median_ratio") - (ratios[0] + ratios[1]) / 2.0).abs() < 1e-9);
    assert!(run["reference"].is_null());

    // The reruns into the cold run's destination: the cold run reuses nothing; with
    // nothing changed almost everything is reused; a rewritten library and an added file
    // are compressed, the rest reused.
    let reruns = run["reruns"].as_array().expect("reruns");
    let scenarios: Vec<&str> = reruns.iter().filter_map(|rerun| rerun["scenario"].as_str()).collect();
    assert_eq!(
        scenarios,
        ["cold", "nothing changed", "one library rewritten, same size and time", "a file added, one removed"]
    );
    let bytes = |index: usize, field: &str| reruns[index][field].as_f64().expect(field);
    let unchanged_compressed = bytes(1, "compressed_bytes");
    assert_eq!(bytes(0, "reused_bytes"), 0.0);
    assert!(bytes(0, "compressed_bytes") >= payload * 0.9, "{}", reruns[0]);
    assert!(bytes(1, "reused_bytes") > 50.0 * bytes(1, "compressed_bytes"), "{}", reruns[1]);
    for rerun in &reruns[2..] {
        let field = |name: &str| rerun[name].as_f64().expect(name);
        assert!(field("compressed_bytes") > unchanged_compressed, "{rerun}");
        assert!(field("reused_bytes") > 0.0, "{rerun}");
    }
    assert!(reruns.iter().all(|rerun| rerun["cost"]["success"] == true), "{reruns:?}");

    // Generated trees are cached by size (put back as they were after the reruns); dist/
    // is removed without --keep.
    assert!(work.path().join("synthetic-16MiB-v2/summary.json").is_file());
    assert!(!work.path().join("run-16MiB/packages").exists());

    // The repair row: a wheel of three quarters of --size linked to the example SDK, its
    // one library coded again against the floor of that library, auditwheel beside it.
    let repair = &report["repair"];
    let field = |pointer: &str| repair.pointer(pointer).and_then(serde_json::Value::as_f64).expect(pointer);
    assert_eq!(repair["repair"]["success"], true, "{}", repair["repair"]["error"]);
    assert!(field("/library_bytes") >= 12.0 * 1048576.0, "{repair}");
    assert_eq!(field("/floor/input_bytes"), field("/library_bytes"));
    assert!(field("/wheel_bytes") > field("/library_bytes") / 2.0 && field("/repaired_bytes") > 0.0, "{repair}");
    assert!(field("/ratio") > 0.0 && field("/cpu_ratio") > 0.0 && field("/copy_seconds") > 0.0, "{repair}");
    assert!(field("/repair/peak_rss_bytes") > 4.0 * 1048576.0);
    assert_eq!(repair["auditwheel"]["success"], true, "{}", repair["auditwheel_note"]);
    assert!(field("/auditwheel_ratio") > 0.0);
}

/// `--artifact-dir` packages a real artifacts directory (here the bundled example) instead
/// of a generated one: the floors and the run cover its bytes, and of the reruns only the
/// one that changes nothing runs, so the tree is left as it was.
#[test]
fn bench_takes_a_real_artifacts_directory_and_leaves_it_unchanged() {
    let work = tempfile::tempdir().expect("tempdir");
    let artifacts = work.path().join("artifacts");
    let example = Command::new(env!("CARGO_BIN_EXE_xtask")).args(["-q", "example", "--out"]).arg(&artifacts).output();
    assert!(example.expect("run xtask example").status.success());
    let listing = |dir: &std::path::Path| -> Vec<(String, u64, bool)> {
        let mut out = Vec::new();
        let mut pending = vec![dir.to_path_buf()];
        while let Some(dir) = pending.pop() {
            for entry in fs_err::read_dir(&dir).expect("list") {
                let entry = entry.expect("entry");
                let metadata = fs_err::symlink_metadata(entry.path()).expect("stat");
                if metadata.is_dir() {
                    pending.push(entry.path());
                }
                out.push((entry.path().display().to_string(), metadata.len(), metadata.is_file()));
            }
        }
        out.sort();
        out
    };
    let before = listing(&artifacts);
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["bench", "--json", "--no-repair", "--work-dir"])
        .arg(work.path().join("bench"))
        .arg("--artifact-dir")
        .arg(&artifacts)
        .output()
        .expect("run xtask bench");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "bench failed:\n{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let run = &report["runs"][0];
    let payload: u64 = before.iter().filter(|(_, _, file)| *file).map(|(_, len, _)| len).sum();
    assert_eq!(run["input"]["payload_bytes"].as_u64(), Some(payload), "{run}");
    assert_eq!(run["libdeflate_floor"]["input_bytes"].as_u64(), Some(payload), "{run}");
    assert_eq!(run["package"]["success"], true, "{}", run["package"]["error"]);
    let scenarios: Vec<&str> =
        run["reruns"].as_array().expect("reruns").iter().filter_map(|r| r["scenario"].as_str()).collect();
    assert_eq!(scenarios, ["cold", "nothing changed"]);
    assert_eq!(listing(&artifacts), before, "the bench changed the tree");
}

/// `--reference` runs the checkout's `build_tools/build_python_packages.py` on the same
/// tree and reports its cost beside ours. TheRock is not here, so a stand-in script takes
/// its place: it writes one archive into `dist/` of the `--dest-dir` it is given, and a
/// staging tree beside it, as the real one does; only `dist/` counts as its output.
#[test]
fn bench_runs_the_reference_packager_of_a_checkout() {
    let work = tempfile::tempdir().expect("tempdir");
    let checkout = work.path().join("TheRock");
    let script = checkout.join("build_tools/build_python_packages.py");
    fs_err::create_dir_all(script.parent().expect("parent")).expect("mkdir");
    fs_err::write(
        &script,
        "import argparse, os, pathlib\n\
         p = argparse.ArgumentParser()\n\
         p.add_argument('--artifact-dir', required=True)\n\
         p.add_argument('--dest-dir', required=True)\n\
         a = p.parse_args()\n\
         assert os.path.isdir(a.artifact_dir), a.artifact_dir\n\
         pathlib.Path(a.dest_dir, 'dist').mkdir(parents=True)\n\
         pathlib.Path(a.dest_dir, 'dist', 'reference.whl').write_bytes(b'x' * 4096)\n\
         pathlib.Path(a.dest_dir, 'staging.txt').write_bytes(b'x' * 100)\n",
    )
    .expect("write the stand-in");
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["bench", "--size", "16MiB", "--alternate", "2", "--json", "--work-dir"])
        .arg(work.path().join("bench"))
        .arg("--reference")
        .arg(&checkout)
        .args(["--no-reruns", "--no-repair"])
        .output()
        .expect("run xtask bench");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "bench failed:\n{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(report["runs"][0]["reruns"], serde_json::json!([]), "--no-reruns");
    let reference = &report["runs"][0]["reference"];
    assert_eq!(reference["cost"]["success"], true, "{reference}");
    assert_eq!(reference["dist_bytes"].as_u64(), Some(4096), "{reference}");
    assert!(reference["ratio_to_ours"].as_f64().is_some_and(|ratio| ratio > 0.0), "{reference}");
}

/// A `--reference` that is not a checkout is refused at once, before the tree is made.
#[test]
fn bench_refuses_a_reference_that_is_not_a_checkout() {
    let work = tempfile::tempdir().expect("tempdir");
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["bench", "--size", "16MiB", "--work-dir"])
        .arg(work.path().join("bench"))
        .arg("--reference")
        .arg(work.path())
        .output()
        .expect("run xtask bench");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("not a TheRock checkout") && stderr.contains("build_python_packages.py"), "{stderr}");
    assert!(!work.path().join("bench").join("synthetic-16MiB-v2").exists(), "generated before refusing");
}
