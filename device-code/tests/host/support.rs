//! What the host-transform tests share: fat HIP binaries compiled by clang++-15 in the test,
//! a C stub of the HIP runtime that decodes what each wrapper registers, and the external
//! judges (`eu-elflint`, `readelf`, Python's msgpack).

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use device_code::host::{self, HostTransform, KpackRef};

/// The marker every test asks for.
pub fn reference(name: &str) -> KpackRef {
    KpackRef {
        search_paths: vec![
            "../.kpack/torch_@GFXARCH@.kpack".to_owned(),
            "/opt/x/.kpack/torch_@GFXARCH@.kpack".to_owned(),
        ],
        kernel_name: name.to_owned(),
    }
}

/// Runs `command`, panicking with its output (and `package`, which provides it) on failure.
pub fn run(command: &mut Command, package: &str) -> Output {
    let output = command.output().unwrap_or_else(|error| panic!("{command:?}: {error} (Debian package {package})"));
    assert!(
        output.status.success(),
        "{command:?} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Transforms `input` into `output` through `write_to`, returning the plan.
pub fn transform(input: &Path, output: &Path, reference: &KpackRef) -> HostTransform {
    let file = File::open(input).expect("open input");
    let binary = host::inspect(&file, input).unwrap_or_else(|error| panic!("{error}"));
    let plan = HostTransform::plan(&binary, reference).unwrap_or_else(|error| panic!("{error}"));
    let mut out = std::io::BufWriter::new(File::create(output).expect("create output"));
    plan.write_to(&file, &mut out).expect("write");
    drop(out);
    let mode = std::fs::metadata(input).expect("stat").permissions();
    std::fs::set_permissions(output, mode).expect("chmod");
    assert_eq!(std::fs::metadata(output).expect("stat").len(), plan.output_len());
    plan
}

/// `eu-elflint --gnu-ld --strict`'s complaints, with addresses masked so that lines about
/// moved things compare equal.
pub fn elflint(path: &Path) -> BTreeSet<String> {
    let output = Command::new("eu-elflint")
        .args(["--gnu-ld", "--strict"])
        .arg(path)
        .output()
        .expect("eu-elflint (Debian package elfutils)");
    let text = String::from_utf8_lossy(&output.stdout);
    let complaints: BTreeSet<String> = text
        .lines()
        .filter(|line| !line.trim().is_empty() && *line != "No errors")
        .map(|line| {
            line.split(' ').map(|word| if word.starts_with("0x") { "0x?" } else { word }).collect::<Vec<_>>().join(" ")
        })
        .collect();
    assert!(output.status.success() || !complaints.is_empty(), "eu-elflint failed: {output:?}");
    complaints
}

/// Asserts that `after` gives eu-elflint nothing to say that `before` did not.
pub fn assert_no_new_complaints(before: &Path, after: &Path) {
    let (was, is) = (elflint(before), elflint(after));
    assert!(is.is_subset(&was), "{}: eu-elflint finds {:?} (before: {was:?})", after.display(), is.difference(&was));
}

/// A Python with msgpack: Debian's (python3-msgpack), or the first `python3` that imports it.
pub fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        ["/usr/bin/python3", "python3"]
            .into_iter()
            .map(PathBuf::from)
            .find(|python| {
                Command::new(python).args(["-c", "import msgpack"]).output().is_ok_and(|output| output.status.success())
            })
            .expect("a python3 with msgpack (Debian package python3-msgpack)")
    })
}

/// A directory under the target dir shared by the tests' one-time builds.
pub fn target_tmp() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

/// `bytes` decoded by Python's msgpack (raw=False, strict) as canonical JSON.
pub fn decode_marker(bytes: &[u8]) -> String {
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    let script = "import json, msgpack, sys\n\
                  m = msgpack.unpackb(bytes.fromhex(sys.argv[1]), raw=False, strict_map_key=True)\n\
                  sys.stdout.write(json.dumps([list(m.keys()), m]))";
    stdout(&run(Command::new(python()).args(["-c", script, &hex]), "python3-msgpack"))
}

/// The JSON `decode_marker` gives for `reference`'s marker.
pub fn marker_json(reference: &KpackRef) -> String {
    let script = "import json, sys\n\
                  m = {'kpack_search_paths': json.loads(sys.argv[1]), 'kernel_name': sys.argv[2]}\n\
                  sys.stdout.write(json.dumps([list(m.keys()), m]))";
    let paths: Vec<String> = reference.search_paths.iter().map(|path| format!("{path:?}")).collect();
    let paths = format!("[{}]", paths.join(", "));
    stdout(&run(Command::new(python()).args(["-c", script, &paths, &reference.kernel_name]), "python3"))
}
