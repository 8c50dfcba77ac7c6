//! The layers the compiler cannot see. Between crates: every workspace crate depends only
//! on the crates its row below allows (their `Cargo.toml`s), so the graph points one way,
//! the release gate reaches none of the crates that plan and write packages, and the
//! packager reaches neither the gate nor the example generator. Inside a crate: this reads
//! every `use crate::…`, `use super::…` and `crate::…::` path of each crate and checks that,
//! among the children of any one module (the crate root's included), the "uses" relation
//! has no cycle: no two modules import each other, directly or around. A module's own
//! children are its implementation and may use it freely.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type ModulePath = Vec<String>;

/// Every module of the crate under `src`, by path (`["verify", "archive"]`), with its file.
fn modules(src: &Path) -> BTreeMap<ModulePath, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs_err::read_dir(&dir).expect("list sources").map(|entry| entry.expect("dir entry")) {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                let relative = path.strip_prefix(src).expect("under src").with_extension("");
                let mut module: ModulePath =
                    relative.components().map(|part| part.as_os_str().to_string_lossy().into_owned()).collect();
                if matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                    module.pop();
                }
                out.insert(module, path);
            }
        }
    }
    out
}

/// The source without comments (so a path named in a doc is no import).
fn code_of(path: &Path) -> String {
    let text = fs_err::read_to_string(path).expect("read source");
    text.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// Expands a use tree (`a::{b, c::{d, e}}`) into its paths.
fn expand(prefix: &[String], tree: &str, out: &mut Vec<ModulePath>) {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let mut path = prefix.to_vec();
        path.extend(tree.split("::").map(|part| part.trim().to_owned()).filter(|part| !part.is_empty()));
        out.push(path);
        return;
    };
    let mut path = prefix.to_vec();
    path.extend(tree[..open].split("::").map(|part| part.trim().to_owned()).filter(|part| !part.is_empty()));
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut depth, mut start) = (0, 0);
    for (at, ch) in inner.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                expand(&path, &inner[start..at], out);
                start = at + 1;
            }
            _ => {}
        }
    }
    expand(&path, &inner[start..], out);
}

/// Paths a file refers to, relative to the crate root where they start with `crate` or
/// `super` (`self` and external crates are not this check's business).
fn references(code: &str) -> Vec<ModulePath> {
    let mut out = Vec::new();
    for statement in code.split(';') {
        let statement = statement.trim();
        let Some(tree) = statement.strip_prefix("use ").or_else(|| statement.strip_prefix("pub use ")).or_else(|| {
            statement.strip_prefix("pub(crate) use ").or_else(|| statement.strip_prefix("pub(super) use "))
        }) else {
            continue;
        };
        if tree.starts_with("crate::") || tree.starts_with("super::") {
            expand(&[], tree, &mut out);
        }
    }
    // Paths used inline, `crate::plan::version::normalize(...)`.
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().last();
        if before.is_some_and(|ch| ch.is_alphanumeric() || ch == '_' || ch == ':') {
            continue;
        }
        let path: String =
            code[at..].chars().take_while(|ch| ch.is_alphanumeric() || *ch == '_' || *ch == ':').collect();
        out.push(path.split("::").filter(|part| !part.is_empty()).map(str::to_owned).collect());
    }
    out
}

/// A reference resolved to the deepest module it names.
fn resolve(from: &ModulePath, reference: &[String], all: &BTreeMap<ModulePath, PathBuf>) -> Option<ModulePath> {
    let mut path: ModulePath = Vec::new();
    let mut rest = reference;
    match rest.first().map(String::as_str) {
        Some("crate") => rest = &rest[1..],
        Some("super") => {
            path = from.clone();
            while rest.first().map(String::as_str) == Some("super") {
                path.pop();
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    path.extend(rest.iter().cloned());
    (0..=path.len()).rev().map(|len| path[..len].to_vec()).find(|candidate| all.contains_key(candidate))
}

/// Edges between sibling modules, with the files that make them.
fn sibling_edges(src: &Path) -> BTreeMap<(ModulePath, ModulePath), BTreeSet<String>> {
    let all = modules(src);
    let mut edges: BTreeMap<(ModulePath, ModulePath), BTreeSet<String>> = BTreeMap::new();
    for (module, file) in &all {
        for reference in references(&code_of(file)) {
            let Some(target) = resolve(module, &reference, &all) else { continue };
            if target.starts_with(module) || module.starts_with(&target) {
                continue; // an ancestor or a descendant: not siblings
            }
            let common = module.iter().zip(&target).take_while(|(a, b)| a == b).count();
            let edge = (module[..=common].to_vec(), target[..=common].to_vec());
            edges.entry(edge).or_default().insert(file.display().to_string());
        }
    }
    edges
}

/// Cycles in a directed graph, each as its modules (Tarjan's strongly connected components).
fn cycles(edges: &BTreeMap<(ModulePath, ModulePath), BTreeSet<String>>) -> Vec<Vec<ModulePath>> {
    let mut graph: BTreeMap<&ModulePath, Vec<&ModulePath>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        graph.entry(from).or_default().push(to);
        graph.entry(to).or_default();
    }
    // Reachability is enough at this size: a node is in a cycle with every node that both
    // reaches it and is reached from it.
    let reach = |start: &ModulePath| -> BTreeSet<ModulePath> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start.clone()];
        while let Some(node) = stack.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if seen.insert((*next).clone()) {
                    stack.push((*next).clone());
                }
            }
        }
        seen
    };
    let mut found: BTreeSet<Vec<ModulePath>> = BTreeSet::new();
    for node in graph.keys() {
        let from_node = reach(node);
        if !from_node.contains(*node) {
            continue;
        }
        let component: Vec<ModulePath> =
            from_node.iter().filter(|other| reach(other).contains(*node)).cloned().collect();
        found.insert(component);
    }
    found.into_iter().collect()
}

fn check_crate(crate_dir: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let src = root.join(crate_dir).join("src");
    let edges = sibling_edges(&src);
    let mut problems = Vec::new();
    for cycle in cycles(&edges) {
        let names: Vec<String> = cycle.iter().map(|module| module.join("::")).collect();
        let mut why = Vec::new();
        for from in &cycle {
            for to in &cycle {
                if let Some(files) = edges.get(&(from.clone(), to.clone())) {
                    why.push(format!(
                        "  {} -> {} (in {})",
                        from.join("::"),
                        to.join("::"),
                        files.iter().cloned().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
        problems.push(format!("{crate_dir}: modules in a cycle: {}\n{}", names.join(", "), why.join("\n")));
    }
    problems
}

/// Each workspace crate (by directory) and the workspace crates it may depend on, in any
/// dependency section. A new crate needs a row; a new edge needs a reason.
///
/// `diagnostic` (the one trait every library error implements) sits below them all and
/// depends on nothing.
const ALLOWED: &[(&str, &[&str])] = &[
    ("xtask", &["packager", "release-gate", "example-artifacts", "diagnostic"]),
    ("packager", &["elf-rpath", "archive-write", "elf-audit", "diagnostic"]),
    ("release-gate", &["elf-audit", "diagnostic"]),
    ("elf-audit", &[]),
    ("elf-rpath", &["diagnostic"]),
    ("archive-write", &["diagnostic"]),
    ("example-artifacts", &["diagnostic"]),
    ("diagnostic", &[]),
];

/// What must never be reachable from a crate, directly or through others: the gate shares
/// no code with what it judges, and the product does not carry its test-input generator.
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("release-gate", &["packager", "elf-rpath", "archive-write", "xtask", "example-artifacts"]),
    ("elf-audit", &["packager", "elf-rpath", "archive-write", "release-gate", "xtask"]),
    ("packager", &["release-gate", "example-artifacts", "xtask"]),
];

/// The workspace crates named in `crate_dir/Cargo.toml`'s dependency sections, by directory.
fn workspace_dependencies(root: &Path, crate_dir: &str, members: &[&str]) -> BTreeSet<String> {
    let manifest = fs_err::read_to_string(root.join(crate_dir).join("Cargo.toml")).expect("read Cargo.toml");
    let mut in_dependencies = false;
    let mut found = BTreeSet::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line.ends_with("dependencies]");
            continue;
        }
        let Some(name) = line.split(['=', '.', ' ']).next().filter(|_| in_dependencies) else { continue };
        if members.contains(&name) {
            found.insert(name.to_owned());
        }
    }
    found
}

#[test]
fn crates_point_one_way() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let members: Vec<&str> = ALLOWED.iter().map(|(name, _)| *name).collect();
    let workspace = fs_err::read_to_string(root.join("Cargo.toml")).expect("read the workspace Cargo.toml");
    let mut problems = Vec::new();
    for (crate_dir, _) in ALLOWED {
        if !workspace.contains(&format!("\"{crate_dir}\"")) {
            problems.push(format!("{crate_dir} is not a workspace member"));
        }
    }
    let graph: BTreeMap<&str, BTreeSet<String>> =
        members.iter().map(|crate_dir| (*crate_dir, workspace_dependencies(&root, crate_dir, &members))).collect();
    for (crate_dir, allowed) in ALLOWED {
        for dependency in &graph[crate_dir] {
            if !allowed.contains(&dependency.as_str()) {
                problems.push(format!("{crate_dir} depends on {dependency}, which its row in ALLOWED does not list"));
            }
        }
    }
    for (crate_dir, forbidden) in FORBIDDEN {
        let mut reached = BTreeSet::new();
        let mut stack: Vec<String> = vec![(*crate_dir).to_owned()];
        while let Some(next) = stack.pop() {
            for dependency in graph.get(next.as_str()).into_iter().flatten() {
                if reached.insert(dependency.clone()) {
                    stack.push(dependency.clone());
                }
            }
        }
        for crate_name in forbidden.iter().filter(|name| reached.contains(**name)) {
            problems.push(format!("{crate_dir} reaches {crate_name}"));
        }
        if reached.contains(*crate_dir) {
            problems.push(format!("{crate_dir} depends on itself, around"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_module_imports_in_a_circle() {
    let mut problems = Vec::new();
    for crate_dir in [
        "packager",
        "elf-rpath",
        "archive-write",
        "elf-audit",
        "release-gate",
        "example-artifacts",
        "xtask",
        "diagnostic",
    ] {
        problems.extend(check_crate(crate_dir));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The check finds what it is for: two sibling modules that import each other.
#[test]
fn a_cycle_between_siblings_is_found() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    fs_err::create_dir_all(src.join("verify")).expect("mkdir");
    fs_err::write(src.join("lib.rs"), "mod verify;\nmod plan;\n").expect("write");
    fs_err::write(src.join("plan.rs"), "use crate::verify::archive::Archive;\n").expect("write");
    fs_err::write(src.join("verify/mod.rs"), "mod archive;\nmod devel;\n").expect("write");
    fs_err::write(src.join("verify/archive.rs"), "use super::devel::{read, Tree};\n").expect("write");
    fs_err::write(src.join("verify/devel.rs"), "pub fn f() { crate::verify::archive::g(); }\n").expect("write");
    let found: Vec<Vec<String>> = cycles(&sibling_edges(src))
        .into_iter()
        .map(|cycle| cycle.into_iter().map(|module| module.join("::")).collect())
        .collect();
    assert_eq!(found, vec![vec!["verify::archive".to_owned(), "verify::devel".to_owned()]]);
}
