//! Style checks that run with `cargo test` (as rust-analyzer's tidy does): every library,
//! CLI and test source file says what it owns in a `//!` doc (a Python module in its
//! docstring) and stays under 600 lines, no comment cites an issue number, and the bottom
//! crates speak their own domain only.

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 600;

/// Every crate's sources and the tests.
const SOURCE_DIRS: [&str; 13] = [
    "packager/src",
    "device-code/src",
    "device-code/tests",
    "diagnostic/src",
    "elf-rpath/src",
    "archive-write/src",
    "elf-audit/src",
    "release-gate/src",
    "example-artifacts/src",
    "xtask/src",
    "xtask-launch/src",
    "xtask/tests",
    "tests",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir").filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn sources_have_module_docs_and_stay_small() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
    let mut files = Vec::new();
    // Tests are held to the same rules: a 600-line test file is as hard to review as code.
    for dir in SOURCE_DIRS {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 30, "found only {} source files", files.len());
    let problems = doc_and_length_problems(&files, |text| text.trim_start().starts_with("//!"), "no `//!` module doc");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The Python we ship and its tests are held to the same rules: each module says what it
/// is in its docstring (a type stub too), and stays under the same length.
#[test]
fn python_modules_have_docstrings_and_stay_small() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
    let mut files = Vec::new();
    source_files(&root.join("packager/python"), &mut files);
    files.retain(|file| file.extension().is_some_and(|ext| ext == "py" || ext == "pyi"));
    assert!(files.len() > 30, "found only {} Python files", files.len());
    let has_docstring = |text: &str| text.starts_with("\"\"\"");
    let problems = doc_and_length_problems(&files, has_docstring, "no module docstring on its first line");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Each of `files` without its module doc (`has_doc` says), or longer than [`MAX_LINES`].
fn doc_and_length_problems(files: &[PathBuf], has_doc: impl Fn(&str) -> bool, no_doc: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).expect("read source");
        if !has_doc(&text) {
            problems.push(format!("{}: {no_doc}", file.display()));
        }
        let lines = text.lines().count();
        if lines > MAX_LINES {
            problems.push(format!("{}: {lines} lines (split it before {MAX_LINES})", file.display()));
        }
    }
    problems
}

/// The bottom crates (ELF surgery, archive writing) speak their own domain only: no word of
/// the product (`rocm`, `gfx…`, `_devel`, AMDGPU, TheRock) and no command-line flag, in code,
/// comments or tests. Policies and words of the product live in `packager` and `xtask`.
#[test]
fn bottom_crates_know_nothing_of_the_product() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
    let mut files = Vec::new();
    for dir in ["elf-rpath/src", "archive-write/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read source");
        for (number, line) in text.lines().enumerate() {
            let lower = line.to_ascii_lowercase();
            let word = ["rocm", "gfx", "_devel", "amdgpu", "therock"].into_iter().find(|word| lower.contains(word));
            let flag = line.match_indices("--").find(|(at, _)| {
                line[at + 2..].starts_with(|c: char| c.is_ascii_lowercase()) && !line[..*at].ends_with('-')
            });
            if let Some(word) = word {
                problems.push(format!("{}:{}: `{word}`: {}", file.display(), number + 1, line.trim()));
            } else if flag.is_some() {
                problems.push(format!("{}:{}: a command-line flag: {}", file.display(), number + 1, line.trim()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Comments say why in words, or point at the contract (`SPEC §N`): an issue number means
/// nothing to a reader who has not got the issue tracker at hand.
#[test]
fn no_comment_cites_an_issue_number() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
    let mut files = Vec::new();
    for dir in SOURCE_DIRS.iter().chain(["packager/python"].iter()) {
        source_files(&root.join(dir), &mut files);
    }
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read source");
        for (number, line) in text.lines().enumerate() {
            let lower = line.to_ascii_lowercase();
            let cites = lower.match_indices("issue").any(|(at, word)| {
                let rest = lower[at + word.len()..].trim_start_matches('s');
                rest.strip_prefix(' ').is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
            });
            if cites {
                problems.push(format!("{}:{}: {}", file.display(), number + 1, line.trim()));
            }
        }
    }
    assert!(files.len() > 30, "found only {} source files", files.len());
    assert!(problems.is_empty(), "say the reason, or cite SPEC §N:\n{}", problems.join("\n"));
}

/// Rust and Python sources (and Python type stubs) under `dir`.
fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir").filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs" || ext == "py" || ext == "pyi") {
            out.push(path);
        }
    }
}
