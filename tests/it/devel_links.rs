//! Devel link targets (SPEC §4; TheRock #7541, #7537): the tarball's links and the device
//! wheels' manifests name their targets with one `..` per path component. Joined verbatim
//! onto the link's directory, such a target makes a path far longer than the file it
//! names, and Windows applies MAX_PATH to the path as given (upstream silently dropped 56
//! of 396 gfx1200 files). Our expansion resolves targets logically; this proves that no
//! path handed to stat, link, open (or any other file system call) carries a `..`, with a
//! device file whose uncollapsed link target passes 260 characters. The Windows round
//! trip (`windows::wine`) runs the same recorder under Wine.

use std::path::Path;

use example_artifacts::DEEP_DEVICE_FILE;

use crate::installed::{self, PATH_WITHOUT_GPU_TOOLS};
use crate::support;
use crate::targets::build;

/// Python that expands the devel tree and links the device files (`get_devel_root`) while
/// recording every path handed to the file system: `os.stat`, `os.lstat` and the `os.path`
/// tests wrapped (on Windows these skip `os.stat`), and the audit events of open, link,
/// rename, mkdir, remove, chmod and directory listings. A
/// symlink's *text* is no path the file system resolves there, so `os.symlink`'s source
/// is left out (its destination is not). Prints JSON: how many paths, those with a `..`
/// component, and the devel root.
pub const RECORDER: &str = r#"
import json, os, re, sys
from rocm_sdk import _devel
seen = []
def note(path):
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if isinstance(path, str):
        seen.append(path)
EVENTS = {"open": (0,), "os.link": (0, 1), "os.symlink": (1,), "os.rename": (0, 1), "os.mkdir": (0,),
          "os.remove": (0,), "os.rmdir": (0,), "os.chmod": (0,), "os.listdir": (0,), "os.scandir": (0,),
          "shutil.copyfile": (0, 1), "os.truncate": (0,), "os.utime": (0,)}
def audit(event, args):
    for index in EVENTS.get(event, ()):
        if index < len(args):
            note(args[index])
def wrap(function, paths=1):
    def wrapped(*args, **options):
        for path in args[:paths]:
            note(path)
        return function(*args, **options)
    return wrapped
os.stat, os.lstat = wrap(os.stat), wrap(os.lstat)
# Windows' os.path tests skip os.stat (nt._path_exists and friends): wrap them too.
for name in ("exists", "lexists", "isfile", "isdir", "islink", "getsize"):
    setattr(os.path, name, wrap(getattr(os.path, name)))
os.path.samefile = wrap(os.path.samefile, paths=2)
sys.addaudithook(audit)
root = _devel.get_devel_root()
def dotted(paths):
    return [path for path in paths if ".." in re.split(r"[\\/]", path)]
offenders = dotted(seen)
# The recorder itself must see a `..` when one is handed over.
count = len(seen)
os.path.exists(os.path.join(str(root), "..", "rocm-recorder-probe"))
print(json.dumps({"paths": count, "offenders": offenders[:5], "probe_seen": bool(dotted(seen[count:])), "root": str(root)}))
"#;

/// Runs [`RECORDER`]'s JSON through the checks both platforms share; returns the devel root.
pub fn assert_no_parent_references(stdout: &[u8]) -> String {
    let report: serde_json::Value = serde_json::from_slice(stdout).expect("the recorder prints JSON");
    assert!(report["paths"].as_u64().unwrap_or(0) > 50, "the recorder saw almost nothing: {report}");
    assert_eq!(report["probe_seen"], true, "the recorder misses paths: {report}");
    assert_eq!(report["offenders"], serde_json::json!([]), "paths with `..` reached the file system");
    report["root"].as_str().expect("root").to_owned()
}

/// How long the link target of `relpath` (in the libraries platform dir `platform`) is when
/// joined verbatim onto its directory in the devel tree at `devel_root`.
pub fn uncollapsed_len(devel_root: &str, relpath: &str, platform: &str) -> usize {
    let directory = relpath.rsplit_once('/').map_or("", |(directory, _)| directory);
    let target = format!("{}{platform}/{relpath}", "../".repeat(relpath.split('/').count()));
    format!("{devel_root}/{directory}/{target}").len()
}

#[test]
fn devel_link_targets_reach_the_file_system_collapsed() {
    let temp = tempfile::tempdir().expect("temp dir");
    let venv = support::fresh_venv(&temp.path().join("venv"));
    let output = support::pip_install(
        &venv,
        &build(true).dist,
        &["rocm[devel,device-gfx1250]"],
        &[("PATH", PATH_WITHOUT_GPU_TOOLS)],
    );
    support::assert_success(&output, "pip install 'rocm[devel,device-gfx1250]'");

    let recorded = installed::python(&venv, RECORDER, &[], &[]);
    installed::assert_success(&recorded, "expanding devel under the recorder");
    let root = assert_no_parent_references(&recorded.stdout);
    // The deep device file is linked in, although its uncollapsed target passes MAX_PATH.
    assert!(uncollapsed_len(&root, DEEP_DEVICE_FILE, "_rocm_sdk_libraries") > 260);
    let linked = Path::new(&root).join(DEEP_DEVICE_FILE);
    let installed_file = installed::site_packages(&venv).join("_rocm_sdk_libraries").join(DEEP_DEVICE_FILE);
    assert!(installed::same_inode(&linked, &installed_file), "{} is not linked in", linked.display());
}
