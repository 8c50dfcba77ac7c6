//! The layers the compiler cannot see. Between crates: every workspace crate depends only
//! on the crates its row below allows (their `Cargo.toml`s), so the graph points one way,
//! the release gate reaches none of the crates that plan and write packages, and the
//! packager reaches neither the gate nor the example generator. Inside a crate: this reads
//! every `use crate::…`, `use super::…` and `crate::…::` path of each crate and checks that,
//! among the children of any one module (the crate root's included), the "uses" relation
//! has no cycle: no two modules import each other, directly or around. A module's own
//! children are its implementation and may use it freely. Inside `packager`: its root
//! holds only the stage folders and the few shared modules [`PACKAGER_LAYERS`] names, and
//! no `use` runs from a lower layer up to a higher one (shared words < input < plan <
//! output < repair < index < the crate's error < request), a root re-export (`pub use x::Y` in `lib.rs`,
//! then `crate::Y`) counting as an import of `x`.

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

/// The `use` trees of `code`'s `use` and `pub use` statements, as written.
fn use_trees(code: &str) -> Vec<&str> {
    code.split(';')
        .map(str::trim)
        .filter_map(|statement| {
            statement.strip_prefix("use ").or_else(|| statement.strip_prefix("pub use ")).or_else(|| {
                statement.strip_prefix("pub(crate) use ").or_else(|| statement.strip_prefix("pub(super) use "))
            })
        })
        .collect()
}

/// Paths a file refers to, relative to the crate root where they start with `crate` or
/// `super` (`self` and external crates are not this check's business).
fn references(code: &str) -> Vec<ModulePath> {
    let mut out = Vec::new();
    for tree in use_trees(code) {
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

/// The modules at `packager`'s root, lowest layer first: the words every stage shares,
/// then the stages in pipeline order, then the crate's error over the stages' errors. A
/// module may import from its own layer (no cycle among them: see above) and from lower
/// ones, never from a higher one. A new root module needs a row here, and a reason.
const PACKAGER_LAYERS: &[(&str, &[&str])] = &[
    ("shared", &["config", "escape", "identity", "owners", "platform", "progress", "relpath", "targets"]),
    ("input", &["input"]),
    ("plan", &["plan"]),
    ("output", &["output"]),
    // A pipeline of its own after the packaging one: it reads a wheel built on the SDK and
    // the SDK's wheels, and writes the repaired wheel with the output stage's parts (payload
    // members, the bill of materials, the manylinux tag, the destination lock).
    ("repair", &["repair"]),
    // A pipeline of its own too: it reads a fat wheel with repair's reader of wheels and
    // writes the host and device wheels with the output stage's parts.
    ("split", &["split"]),
    ("index", &["index"]),
    ("error", &["error"]),
    // A run as its caller asks for it, resolved into a config before the pipeline runs:
    // it reads the checkout (input) and checks the version (plan), and wraps both errors.
    ("request", &["request"]),
];

/// What `pub use` in `src/lib.rs` makes of a root name: `Y` → `x::…::Y` for each
/// `pub use x::…::Y` (or `… as Y`); and the re-exports of anything not a module of the
/// crate, which callers should name themselves.
fn root_reexports(src: &Path, all: &BTreeMap<ModulePath, PathBuf>) -> (BTreeMap<String, ModulePath>, Vec<String>) {
    let mut names = BTreeMap::new();
    let mut foreign = Vec::new();
    let code = code_of(&src.join("lib.rs"));
    for tree in code.split(';').filter_map(|statement| statement.trim().strip_prefix("pub use ")) {
        let mut paths = Vec::new();
        expand(&[], tree, &mut paths);
        for mut path in paths {
            let alias = match path.last().and_then(|last| last.split_once(" as ")) {
                Some((name, alias)) => {
                    let alias = alias.trim().to_owned();
                    let name = name.trim().to_owned();
                    path.pop();
                    path.push(name);
                    alias
                }
                None => path.last().cloned().unwrap_or_default(),
            };
            if path.first().map(String::as_str) == Some("crate") {
                path.remove(0);
            }
            if path.first().is_some_and(|first| all.contains_key(&vec![first.clone()])) {
                names.insert(alias, path);
            } else {
                foreign.push(path.join("::"));
            }
        }
    }
    (names, foreign)
}

/// `packager`'s root layout and the direction of its imports between root modules.
fn check_packager_layers(src: &Path) -> Vec<String> {
    let all = modules(src);
    let layer_of = |module: &str| PACKAGER_LAYERS.iter().position(|(_, members)| members.contains(&module));
    let mut problems = Vec::new();
    for module in all.keys().filter(|module| module.len() == 1) {
        if layer_of(&module[0]).is_none() {
            problems.push(format!(
                "packager's root holds `{}`, which is neither a stage folder nor a shared module of \
                 PACKAGER_LAYERS: move it into the stage it serves, or name it there with a reason",
                module[0]
            ));
        }
    }
    let (reexports, foreign) = root_reexports(src, &all);
    for path in foreign {
        problems.push(format!("packager's lib.rs re-exports `{path}`: callers name the crates below themselves"));
    }
    let mut edges: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for (module, file) in all.iter().filter(|(module, _)| !module.is_empty()) {
        for mut reference in references(&code_of(file)) {
            // `crate::Y` where the root re-exports `Y` from `x`: an import of `x`.
            if reference.first().map(String::as_str) == Some("crate") {
                if let Some(target) = reference.get(1).and_then(|name| reexports.get(name)) {
                    let rest = reference.split_off(2);
                    reference = std::iter::once("crate".to_owned()).chain(target.iter().cloned()).chain(rest).collect();
                }
            }
            let Some(target) = resolve(module, &reference, &all) else { continue };
            let Some(to) = target.first() else { continue };
            if *to != module[0] {
                edges.entry((module[0].clone(), to.clone())).or_default().insert(file.display().to_string());
            }
        }
    }
    for ((from, to), files) in &edges {
        let (Some(from_layer), Some(to_layer)) = (layer_of(from), layer_of(to)) else { continue };
        if to_layer > from_layer {
            problems.push(format!(
                "packager: `{from}` ({}) imports `{to}` ({}), a higher layer (in {})",
                PACKAGER_LAYERS[from_layer].0,
                PACKAGER_LAYERS[to_layer].0,
                files.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    problems
}

#[test]
fn packager_stages_import_only_downward() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packager/src");
    let problems = check_packager_layers(&src);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The check finds what it is for: an import back up (directly, and through a root
/// re-export), a stray root module, and a lower crate re-exported by `lib.rs`.
#[test]
fn an_import_back_up_a_stray_root_module_and_a_reexported_crate_are_found() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    fs_err::create_dir_all(src.join("plan")).expect("mkdir");
    fs_err::create_dir_all(src.join("output")).expect("mkdir");
    fs_err::write(
        src.join("lib.rs"),
        "mod config;\nmod plan;\nmod output;\nmod assemble;\npub use output::report::Report;\npub use some_crate as write;\n",
    )
    .expect("write");
    fs_err::write(src.join("config.rs"), "use crate::plan::Plan;\n").expect("write");
    fs_err::write(src.join("plan/mod.rs"), "pub fn f() -> crate::Report { todo!() }\n").expect("write");
    fs_err::write(src.join("output/mod.rs"), "pub mod report;\nuse crate::plan::Plan;\n").expect("write");
    fs_err::write(src.join("output/report.rs"), "pub struct Report;\n").expect("write");
    fs_err::write(src.join("assemble.rs"), "use crate::config::X;\n").expect("write");
    let problems = check_packager_layers(src);
    let found = |needle: &str| problems.iter().filter(|problem| problem.contains(needle)).count();
    assert_eq!(found("`config` (shared) imports `plan` (plan)"), 1, "{problems:#?}");
    assert_eq!(found("`plan` (plan) imports `output` (output)"), 1, "{problems:#?}");
    assert_eq!(found("holds `assemble`"), 1, "{problems:#?}");
    assert_eq!(found("re-exports `some_crate`"), 1, "{problems:#?}");
    assert_eq!(problems.len(), 4, "{problems:#?}");
}

/// Each workspace crate (by directory) and the workspace crates it may depend on, in any
/// dependency section. A new crate needs a row; a new edge needs a reason.
///
/// `diagnostic` (the one trait every library error implements) sits below them all and
/// depends on nothing.
const ALLOWED: &[(&str, &[&str])] = &[
    // The CLI names the crates below the packager itself (`xtask elf` edits ELF files, the
    // bench and the interrupt handler speak archive-write's words): the packager does not
    // re-export them.
    (
        "xtask",
        &["packager", "release-gate", "example-artifacts", "diagnostic", "archive-write", "elf-rpath", "device-code"],
    ),
    ("packager", &["elf-rpath", "archive-write", "elf-audit", "device-code", "diagnostic"]),
    ("release-gate", &["elf-audit", "diagnostic"]),
    ("elf-audit", &[]),
    // Device code (offload bundles, kpack archives, the host transform) knows the GPU
    // toolchain's formats but nothing of packages, so it sits beside the other ELF crates.
    ("device-code", &["diagnostic"]),
    ("elf-rpath", &["diagnostic"]),
    ("archive-write", &["diagnostic"]),
    ("example-artifacts", &["diagnostic"]),
    ("diagnostic", &[]),
];

/// What must never be reachable from a crate, directly or through others: the gate shares
/// no code with what it judges, and the product does not carry its test-input generator.
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("release-gate", &["packager", "elf-rpath", "archive-write", "device-code", "xtask", "example-artifacts"]),
    ("elf-audit", &["packager", "elf-rpath", "archive-write", "release-gate", "xtask"]),
    ("device-code", &["packager", "elf-rpath", "archive-write", "release-gate", "xtask"]),
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
