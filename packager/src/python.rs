//! The Python code shipped inside the packages (files under `packager/python/`, embedded
//! with `include_str!`) and the generated `_dist_info_data.py` (SPEC §2, §3, §4).
//!
//! Owns: which Python files each package carries, the console-script entry points, and the
//! one way untrusted text enters Python source ([`str_literal`]). Does not own: the
//! package names (`identity`), which native files go where (`plan`), or archive formats
//! (`write`).
//!
//! Every pure package carries the static `rocm_sdk/_dist_info.py` as it is, and beside it
//! the constants of its build in a generated `_dist_info_data.py`, which that module
//! imports: generated code holds data only. The Python side computes the same names at
//! run time (`_dist_info.py`); the tests below run both and compare.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::identity::{NamingScheme, PackageNames, PackageRole};
use crate::targets::Target;
use crate::write::EntryPoint;

mod embedded;

use embedded::{CORE_CLI, DIST_INFO, PROFILER_CLI};

/// What `_dist_info_data.py` says about the whole build; one value per run, shared by every
/// package so that they all agree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistInfo {
    pub version: String,
    /// `--version-suffix`, appended to every platform directory name (usually empty).
    pub nonce: String,
    pub kpack_split: bool,
    pub default_target_family: Option<String>,
    /// Legacy: families (`gfx110X-all`); kpack-split: base targets (`gfx90a`).
    pub available_target_families: Vec<String>,
    pub linux_target_families: Vec<String>,
    pub windows_target_families: Vec<String>,
    /// Kpack-split: the base targets that have a device wheel.
    pub device_targets: Vec<String>,
    /// Multi-family legacy builds: one `rocm-sdk-devel-{family}` per family (SPEC §2).
    pub devel_target_specific: bool,
    /// A Windows build (SPEC §7): the Linux-only console scripts are left out.
    pub windows: bool,
}

impl DistInfo {
    /// What of the build decides package names.
    pub fn naming(&self) -> NamingScheme<'_> {
        NamingScheme {
            kpack_split: self.kpack_split,
            devel_target_specific: self.devel_target_specific,
            nonce: &self.nonce,
        }
    }

    /// The names `role` has in this build.
    pub fn names(&self, role: &PackageRole) -> PackageNames {
        PackageNames::new(role, self.naming())
    }
}

/// A file to place in a package.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PythonFile {
    /// '/'-separated member path inside the wheel, the sdist root or the devel tarball.
    pub path: String,
    pub bytes: Vec<u8>,
    pub executable: bool,
}

/// The Python side of one package.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PythonPart {
    /// Wheel members: the pure package (with its `_dist_info.py` and `_dist_info_data.py`) and the platform
    /// directory's `__init__.py`; for a device wheel, only its `_device_{target}.py`.
    pub files: Vec<PythonFile>,
    /// Devel only: entries for the devel tarball (its platform directory's `__init__.py`);
    /// paths start with the devel platform directory.
    pub devel_tree_files: Vec<PythonFile>,
    pub entry_points: Vec<EntryPoint>,
}

/// A Python string literal for `value` that evaluates back to exactly `value`.
///
/// Every character outside printable ASCII is escaped, so the literal is one line of
/// ASCII whatever the input: a quote, backslash or newline in a directory name cannot
/// end the literal or the line.
pub fn str_literal(value: &str) -> String {
    let mut literal = String::with_capacity(value.len() + 2);
    literal.push('\'');
    for c in value.chars() {
        let code = u32::from(c);
        match c {
            '\\' => literal.push_str("\\\\"),
            '\'' => literal.push_str("\\'"),
            '\n' => literal.push_str("\\n"),
            '\r' => literal.push_str("\\r"),
            '\t' => literal.push_str("\\t"),
            ' '..='~' => literal.push(c),
            _ if code < 0x100 => {
                let _ = write!(literal, "\\x{code:02x}");
            }
            _ if code < 0x1_0000 => {
                let _ = write!(literal, "\\u{code:04x}");
            }
            _ => {
                let _ = write!(literal, "\\U{code:08x}");
            }
        }
    }
    literal.push('\'');
    literal
}

fn optional_literal(value: Option<&str>) -> String {
    value.map_or_else(|| "None".to_owned(), str_literal)
}

/// A sorted, de-duplicated Python list literal (order is defined, SPEC §6).
fn list_literal(values: &[String]) -> String {
    let sorted: BTreeSet<&str> = values.iter().map(String::as_str).collect();
    let items: Vec<String> = sorted.into_iter().map(str_literal).collect();
    format!("[{}]", items.join(", "))
}

/// A Python dict literal of string pairs, sorted by key.
fn dict_literal(pairs: &std::collections::BTreeMap<String, String>) -> String {
    let items: Vec<String> =
        pairs.iter().map(|(key, value)| format!("{}: {}", str_literal(key), str_literal(value))).collect();
    format!("{{{}}}", items.join(", "))
}

fn bool_literal(value: bool) -> &'static str {
    if value {
        "True"
    } else {
        "False"
    }
}

/// The module every pure package's `_dist_info.py` imports its constants from: this build
/// and this package (SPEC §2, `_dist_info.py`), each value a literal of [`str_literal`] or
/// another plain literal, nothing else. `rocm_sdk/_dist_info_data.pyi` declares the names
/// and their types for the static module's type check; a test holds the two together.
pub fn render_dist_info_data(role: &PackageRole, info: &DistInfo) -> String {
    let this_family = role.family_or_target();
    let mut source = String::new();
    source.push_str(
        "\"\"\"What `_dist_info` says about this build and this package (SPEC section 2).\n\n\
         Generated by the ROCm packager for this package; `_dist_info.py` beside it is the\n\
         same in every package and imports these constants. Do not edit.\n\"\"\"\n\n",
    );
    for (name, value) in dist_info_constants(role, info, this_family) {
        let _ = writeln!(source, "{name} = {value}");
    }
    source
}

/// The names and literals of `_dist_info_data.py`, in the order the module lists them.
fn dist_info_constants(role: &PackageRole, info: &DistInfo, this_family: Option<&str>) -> [(&'static str, String); 12] {
    [
        ("__version__", str_literal(&info.version)),
        ("PY_PACKAGE_SUFFIX_NONCE", str_literal(&info.nonce)),
        ("KPACK_SPLIT", bool_literal(info.kpack_split).to_owned()),
        ("DEVEL_TARGET_SPECIFIC", bool_literal(info.devel_target_specific).to_owned()),
        ("DEFAULT_TARGET_FAMILY", optional_literal(info.default_target_family.as_deref())),
        ("AVAILABLE_TARGET_FAMILIES", list_literal(&info.available_target_families)),
        ("LINUX_TARGET_FAMILIES", list_literal(&info.linux_target_families)),
        ("WINDOWS_TARGET_FAMILIES", list_literal(&info.windows_target_families)),
        ("DEVICE_TARGETS", list_literal(&info.device_targets)),
        ("TARGET_OWNERS", dict_literal(crate::owners::owner_overrides())),
        ("THIS_TARGET_FAMILY", optional_literal(this_family)),
        ("THIS_PACKAGE_LOGICAL_NAME", str_literal(role.logical_name())),
    ]
}

/// `{package}/_dist_info.py` (the static module) and `{package}/_dist_info_data.py` (its
/// generated constants) for the pure package `package` of `role`.
fn dist_info_files(package: &str, role: &PackageRole, info: &DistInfo) -> [PythonFile; 2] {
    [
        file(format!("{package}/_dist_info.py"), DIST_INFO),
        file(format!("{package}/_dist_info_data.py"), &render_dist_info_data(role, info)),
    ]
}

fn file(path: String, contents: &str) -> PythonFile {
    PythonFile { path, bytes: contents.as_bytes().to_vec(), executable: false }
}

/// Where a console script's tool exists, by the section of the `TOOLS` table it is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ToolPlatforms {
    Every,
    WindowsOnly,
    LinuxOnly,
}

/// A console script of a trampoline module's `TOOLS` table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsoleScript<'a> {
    pub name: &'a str,
    /// The tool's path inside the platform directory (`bin/hipcc`; `.exe` on Windows).
    pub tool: &'a str,
}

/// The console scripts a trampoline module declares for the build's platform: the keys of
/// its `TOOLS` table, in source order, from the sections that apply (`# Windows only.`,
/// `# Linux only.`; SPEC §4, console scripts). The table is ours, embedded at compile
/// time; the tests check the parse against Python's own reading of it.
fn console_scripts(cli_source: &str, windows: bool) -> Vec<ConsoleScript<'_>> {
    let mut section = ToolPlatforms::Every;
    let mut scripts = Vec::new();
    let table = cli_source.lines().skip_while(|line| !line.starts_with("TOOLS = {")).skip(1);
    for line in table.take_while(|line| !line.starts_with('}')) {
        match line.trim() {
            "# Every platform." => section = ToolPlatforms::Every,
            "# Windows only." => section = ToolPlatforms::WindowsOnly,
            "# Linux only." => section = ToolPlatforms::LinuxOnly,
            _ => {}
        }
        let wanted = match section {
            ToolPlatforms::Every => true,
            ToolPlatforms::WindowsOnly => windows,
            ToolPlatforms::LinuxOnly => !windows,
        };
        // `"name": ("path", ...),` or `"name": "path",`
        let mut quoted = line.trim_start().split('"');
        if let (true, Some(""), Some(name), Some(tool)) = (wanted, quoted.next(), quoted.next(), quoted.nth(1)) {
            scripts.push(ConsoleScript { name, tool });
        }
    }
    scripts
}

/// The console scripts of `role` (core and profiler have them) for the build's platform.
pub fn console_scripts_of(role: &PackageRole, info: &DistInfo) -> Vec<ConsoleScript<'static>> {
    match role {
        PackageRole::Core => console_scripts(CORE_CLI, info.windows),
        PackageRole::Profiler => console_scripts(PROFILER_CLI, info.windows),
        _ => Vec::new(),
    }
}

/// The trampoline function of a console script, as the modules' `function_name` computes it.
fn trampoline_function(script: &str) -> String {
    script.replace("++", "pp").chars().map(|c| if c.is_alphanumeric() { c } else { '_' }).collect()
}

fn entry_points(module: &str, cli_source: &str, windows: bool) -> Vec<EntryPoint> {
    console_scripts(cli_source, windows)
        .into_iter()
        .map(|script| EntryPoint {
            group: crate::write::CONSOLE_SCRIPTS.to_owned(),
            name: script.name.to_owned(),
            target: format!("{module}:{}", trampoline_function(script.name)),
        })
        .collect()
}

/// The Python files and console scripts of one package (see [`PythonPart`]).
///
/// Device wheels get only their own metadata module ([`device_module_name`]): every file
/// they carry must be theirs alone (SPEC §6), so no `__init__.py` or `_dist_info.py`; and
/// `.devel_links/{target}.json` is the plan's.
pub fn python_part(role: &PackageRole, info: &DistInfo) -> PythonPart {
    if let PackageRole::Device { target } = role {
        return device_part(target, info);
    }
    let names = info.names(role);
    let Some(package) = names.pure_package else {
        return PythonPart::default();
    };
    let mut part = PythonPart::default();
    let init = match role {
        PackageRole::Meta => {
            part.files = embedded::META_PACKAGE
                .iter()
                .map(|(path, contents)| file(format!("rocm_sdk/{path}"), contents))
                .collect();
            None
        }
        PackageRole::Core => {
            part.files.push(file(format!("{package}/_cli.py"), CORE_CLI));
            part.entry_points = entry_points(&format!("{package}._cli"), CORE_CLI, info.windows);
            Some(embedded::CORE_INIT)
        }
        PackageRole::Profiler => {
            part.files.push(file(format!("{package}/_cli.py"), PROFILER_CLI));
            part.entry_points = entry_points(&format!("{package}._cli"), PROFILER_CLI, info.windows);
            Some(embedded::PROFILER_INIT)
        }
        PackageRole::Libraries { .. } => Some(embedded::LIBRARIES_INIT),
        PackageRole::Devel { .. } => Some(embedded::DEVEL_INIT),
        PackageRole::Device { .. } => None,
    };
    if let Some(init) = init {
        part.files.push(file(format!("{package}/__init__.py"), init));
    }
    if matches!(role, PackageRole::Meta) {
        // The meta package's own copy of `_dist_info.py` is one of its embedded files.
        part.files.push(file(format!("{package}/_dist_info_data.py"), &render_dist_info_data(role, info)));
    } else {
        part.files.extend(dist_info_files(&package, role, info));
    }
    if let Some(platform_dir) = names.platform_dir {
        let platform_init = file(format!("{platform_dir}/__init__.py"), embedded::PLATFORM_INIT);
        if matches!(role, PackageRole::Devel { .. }) {
            part.devel_tree_files.push(platform_init);
        } else {
            part.files.push(platform_init);
        }
    }
    part.files.sort_by(|a, b| a.path.cmp(&b.path));
    part
}

/// The module a device wheel adds to the libraries platform dir: `_device_gfx90a`. Named
/// after the target's owner, as the wheel is, so that no two wheels ship it (SPEC §6).
/// Characters other than ASCII lower-case letters and digits, `_` included, become `_` and
/// two hex digits per byte, so two different owners never share a module and the name is
/// always an identifier.
pub fn device_module_name(target: &str) -> String {
    let mut name = String::from("_device_");
    for byte in Target::from_target_id(target).owner().as_str().bytes() {
        if byte.is_ascii_lowercase() || byte.is_ascii_digit() {
            name.push(char::from(byte));
        } else {
            let _ = write!(name, "_{byte:02x}");
        }
    }
    name
}

/// `{libraries platform dir}/_device_{target}.py`: what `_dist_info_data.py` would say about a
/// device wheel (SPEC §2: `__version__`, and `LIBRARIES_PY_PACKAGE_NAME`, the pure package
/// that holds the shared `_dist_info.py`), in a module only this wheel ships.
fn device_part(target: &Target, info: &DistInfo) -> PythonPart {
    let names = info.names(&PackageRole::Device { target: target.clone() });
    let (Some(platform_dir), Some(libraries_package)) =
        (names.platform_dir, info.names(&PackageRole::Libraries { family: None }).pure_package)
    else {
        return PythonPart::default();
    };
    let mut source = String::from(
        "\"\"\"Metadata of one device wheel (SPEC section 2), generated by the ROCm packager.\n\n\
         Each device wheel ships its own module, named after its target, so that removing one\n\
         device wheel never removes a file another wheel needs. Do not edit.\n\"\"\"\n\n",
    );
    let constants = [
        ("__version__", str_literal(&info.version)),
        ("TARGET", str_literal(target.owner().as_str())),
        ("DIST_NAME", str_literal(&names.distribution)),
        ("LIBRARIES_PY_PACKAGE_NAME", str_literal(&libraries_package)),
    ];
    for (name, value) in constants {
        let _ = writeln!(source, "{name} = {value}");
    }
    let path = format!("{platform_dir}/{}.py", device_module_name(target.as_str()));
    PythonPart { files: vec![file(path, &source)], ..PythonPart::default() }
}

/// The entry point group PEP 850 (draft) names for installed provider plugins; variantlib
/// takes the entry point's name as the plugin's namespace.
pub const VARIANT_PLUGINS_GROUP: &str = "variant_plugins";

/// The files of the `amd` variant provider plugin's wheel (SPEC §9): its module, the KFD
/// topology reader `rocm-sdk doctor` uses (the same embedded bytes, so the repository
/// holds one copy) and the owner table, under `rocm_sdk_variant_provider/`; and its
/// `variant_plugins` entry point for `namespace`.
pub fn variant_provider_part(namespace: &str) -> PythonPart {
    let package = crate::identity::VARIANT_PROVIDER_PACKAGE;
    let files = vec![
        file(format!("{package}/__init__.py"), embedded::VARIANT_PROVIDER_INIT),
        file(format!("{package}/_kfd_topology.py"), embedded::KFD_TOPOLOGY),
        file(format!("{package}/target_owners.json"), crate::owners::TABLE_JSON),
    ];
    let entry_point =
        EntryPoint { group: VARIANT_PLUGINS_GROUP.to_owned(), name: namespace.to_owned(), target: package.to_owned() };
    PythonPart { files, devel_tree_files: Vec::new(), entry_points: vec![entry_point] }
}

/// Everything in the `rocm` sdist except PKG-INFO (which the writer renders), with paths
/// relative to the sdist's `rocm-{version}/` root.
///
/// PKG-INFO must not claim Requires-Dist statically: use Metadata-Version 2.1, or 2.2+
/// with `Dynamic: Requires-Dist` and `Dynamic: Provides-Extra`, or installers (uv) may
/// skip the build that selects the GPU packages.
pub fn sdist_files(info: &DistInfo) -> Vec<PythonFile> {
    let mut files = python_part(&PackageRole::Meta, info).files;
    files.push(file("pyproject.toml".to_owned(), embedded::META_PYPROJECT));
    files.push(file("_rocm_build_backend.py".to_owned(), embedded::META_BACKEND));
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

#[cfg(test)]
mod tests;
