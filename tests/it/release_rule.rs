//! One rule for "the same release" (SPEC §2): a table of versions walked through pip's own
//! `packaging.specifiers` (with and without `--pre`) reading the pins both renderers write
//! (the packager's and the `rocm` sdist's build backend's), the runtime's
//! `rocm_sdk._release.release_admits` and the release gate's `release_admits`. They agree
//! on every row: what a set's pins admit with `--pre` is what the runtime and the gate
//! call the set's release, and without `--pre` it is that less the pre releases.

use std::path::Path;
use std::process::Command;

use crate::support;

/// (set version, candidate, pip admits it with `--pre`, pip admits it without).
const TABLE: &[(&str, &str, bool, bool)] = &[
    // A final release: itself, its post releases, and their local builds.
    ("7.12.0", "7.12.0", true, true),
    ("7.12.0", "7.12.0.0", true, true),
    ("7.12.0", "7.12", true, true),
    ("7.12.0", "7.12.0.post1", true, true),
    ("7.12.0", "7.12.0.post12", true, true),
    ("7.12.0", "7.12.0+local", true, true),
    ("7.12.0", "7.12.0.post1+local.7", true, true),
    // A dev build of a post release: a pre release to pip, taken with `--pre`.
    ("7.12.0", "7.12.0.post1.dev3", true, false),
    ("7.12.0", "7.12.0.post0.dev0", true, false),
    // What `>=7.12.0,<7.12.0.0.1` admitted and the rule does not.
    ("7.12.0", "7.12.0.1", false, false),
    ("7.12.0", "7.12.0.1rc1", false, false),
    ("7.12.0", "7.12.0.0.1", false, false),
    ("7.12.0", "7.12.0.0.1.dev0", false, false),
    // PEP 440 orders these between 7.12.0.post* and 7.12.0.0.1: no specifier leaves them
    // out, so they are the release too (SPEC §2 says so).
    ("7.12.0", "7.12.0.0.0.1", true, true),
    ("7.12.0", "7.12.0.0.0.1rc1", true, false),
    // Pre and dev releases of it, other releases, other epochs.
    ("7.12.0", "7.12.0rc1", false, false),
    ("7.12.0", "7.12.0.dev0", false, false),
    ("7.12.0", "7.12.0rc1.post1", false, false),
    ("7.12.0", "7.12.1", false, false),
    ("7.12.0", "7.12.1rc1", false, false),
    ("7.12.0", "7.13.0", false, false),
    ("7.12.0", "7.11.9.post1", false, false),
    ("7.12.0", "1!7.12.0", false, false),
    // A set built as a post release pins the same release.
    ("7.12.0.post1", "7.12.0", true, true),
    ("7.12.0.post1", "7.12.0.post2", true, true),
    ("7.12.0.post1", "7.12.0.1", false, false),
    ("1!7.12.0", "1!7.12.0.post3", true, true),
    ("1!7.12.0", "7.12.0", false, false),
    // Four-part finals are releases of their own.
    ("7.12.0.1", "7.12.0.1.post1", true, true),
    ("7.12.0.1", "7.12.0", false, false),
    ("7.12.0.1", "7.12.0.2", false, false),
    // Dev, pre and local versions pin themselves (`==V`), as PEP 440 compares them.
    ("7.12.0.dev0", "7.12.0.dev0", true, true),
    ("7.12.0.dev0", "7.12.0.0.dev0", true, true),
    ("7.12.0.dev0", "7.12.0.dev0+local", true, true),
    ("7.12.0.dev0", "7.12.0.dev1", false, false),
    ("7.12.0.dev0", "7.12.0", false, false),
    ("7.12.0.dev0", "7.12.0.post1.dev0", false, false),
    ("7.12.0rc1", "7.12.0rc1", true, true),
    ("7.12.0rc1", "7.12.0rc1.post1", false, false),
    ("7.12.0rc1", "7.12.0", false, false),
    ("7.12.0a20260822", "7.12.0a20260822", true, true),
    ("7.12.0a20260822", "7.12.0a20260823", false, false),
    ("7.12.0.post1.dev3", "7.12.0.post1.dev3", true, true),
    ("7.12.0.post1.dev3", "7.12.0.post1", false, false),
    ("7.12.0+abc", "7.12.0+abc", true, true),
    ("7.12.0+abc", "7.12.0", false, false),
    ("7.12.0+abc", "7.12.0.post1", false, false),
];

/// For each row: the Python renderer's pin, pip's `packaging` with and without `--pre`
/// on the packager's pin, and the runtime's answer. Without `--pre`, pip filters an index's
/// versions with `prereleases=None`: pre releases only when the specifier names one or no
/// final version matches; here the index holds the set's own version beside the candidate.
const JUDGE: &str = r#"
import json, sys
sys.path.insert(0, sys.argv[1])
from pip._vendor.packaging.specifiers import SpecifierSet
from tests import support
info = support.load_dist_info()
release = support.load_release()
answers = []
for set_version, candidate, pin in json.loads(sys.argv[2]):
    specifiers = SpecifierSet(pin)
    answers.append([
        info.release_specifier(set_version),
        specifiers.contains(candidate, prereleases=True),
        candidate in list(specifiers.filter([set_version, candidate])),
        release.release_admits(set_version, candidate),
    ])
print(json.dumps(answers))
"#;

#[test]
fn pip_the_runtime_and_the_gate_agree_on_every_version() {
    let rows: Vec<(&str, &str, String)> = TABLE
        .iter()
        .map(|(set, candidate, _, _)| (*set, *candidate, packager::plan::version::release_specifier(set)))
        .collect();
    let python_root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packager/python");
    let json = serde_json::to_string(&rows).expect("rows as JSON");
    let output = support::run(
        Command::new(support::tools_venv().join("bin/python"))
            .args(["-c", JUDGE])
            .arg(&python_root)
            .arg(&json)
            .env("PYTHONDONTWRITEBYTECODE", "1"),
    );
    let answers: Vec<(String, bool, bool, bool)> = serde_json::from_str(&output).expect("answers as JSON");
    assert_eq!(answers.len(), TABLE.len());
    let mut disagreements = Vec::new();
    for ((set, candidate, with_pre, without_pre), (pin, answer)) in
        TABLE.iter().zip(rows.iter().map(|row| &row.2).zip(&answers))
    {
        let (python_pin, pip_pre, pip, runtime) = answer;
        let gate = release_gate::release_admits(set, candidate);
        let row = (python_pin == pin, *pip_pre, *pip, *runtime, gate);
        if row != (true, *with_pre, *without_pre, *with_pre, *with_pre) {
            disagreements.push(format!(
                "{set} pins {pin} (the backend: {python_pin}); {candidate}: pip --pre {pip_pre} (table {with_pre}), \
                 pip {pip} (table {without_pre}), runtime {runtime}, gate {gate}"
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}
