//! The third-party sources a TheRock checkout names: each `third-party/sysdeps/{linux,
//! common}/*/CMakeLists.txt` fetches one source archive (`URL`, `URL_HASH "SHA256=…"`) and
//! lists the shared libraries it installs (`LIB_NAMES libnuma.so`), and the LLVM of
//! `compiler/amd-llvm` says its version in `cmake/Modules/LLVMVersion.cmake`.
//!
//! The files are read, not run (as `therock`'s target table is): `set(NAME value)` is
//! substituted into `${NAME}`, nothing else is evaluated. A project's name and version are
//! those its archive's file name spells (`numactl-2.0.19.tar.gz`); an archive named by a
//! commit gives no version, and none is made up. Owns: that reading. Does not own: which
//! packaged file came from which project, or how a bill of materials says it (`sbom`).

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use super::therock::{tokenize, Token};
use super::CatalogError;

/// The directories of the checkout whose subdirectories are third-party projects.
pub const SYSDEPS_DIRS: [&str; 2] = ["third-party/sysdeps/linux", "third-party/sysdeps/common"];

/// Where LLVM keeps its version, in the checkout's LLVM source.
pub const LLVM_VERSION_CMAKE: &str = "compiler/amd-llvm/cmake/Modules/LLVMVersion.cmake";

/// What a checkout says about the third-party code a build bundles.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThirdPartySources {
    /// Sorted by `cmake`.
    pub projects: Vec<SourceProject>,
    /// `LLVM_VERSION_MAJOR.MINOR.PATCH` and its suffix, when the LLVM source is checked out;
    /// else what the build itself says ([`llvm_version_of_build`]).
    pub llvm_version: Option<String>,
    /// Where `llvm_version` was read: [`LLVM_VERSION_CMAKE`], or the build's file it was
    /// read from.
    pub llvm_version_source: Option<String>,
}

/// One project of `third-party/sysdeps`: the source archive it is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceProject {
    /// The file that names it, relative to the checkout (`third-party/sysdeps/linux/numactl/CMakeLists.txt`).
    pub cmake: String,
    /// The upstream project, as its archive names it (`numactl`, `binutils` for libiberty).
    pub name: String,
    /// As the archive names it (`2.0.19`); `None` when it names none (a commit).
    pub version: Option<String>,
    /// The `URL` the build fetches.
    pub url: String,
    /// `URL_HASH`: the algorithm as CycloneDX spells it (`SHA-256`, `SHA-512`) and lower-case
    /// hex; `None` when there is none, or none of a length the algorithm gives.
    pub hash: Option<(&'static str, String)>,
    /// The shared libraries it installs, as `LIB_NAMES` gives them (`libnuma.so`).
    pub libraries: Vec<String>,
}

/// Reads the third-party sources of the checkout at `root`. Directories that do not exist
/// give nothing; a project file without a `URL` fetches nothing and is left out.
pub fn read_third_party(root: &Path) -> Result<ThirdPartySources, CatalogError> {
    let mut sources = ThirdPartySources::default();
    for dir in SYSDEPS_DIRS {
        let entries = match std::fs::read_dir(root.join(dir)) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(CatalogError::Read { path: root.join(dir), source }),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| CatalogError::Read { path: root.join(dir), source })?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        for name in names {
            let cmake = format!("{dir}/{name}/CMakeLists.txt");
            let path = root.join(&cmake);
            let text = match crate::input::metadata_file::read_metadata_file(&path) {
                Ok(text) => text,
                // A file beside the projects (README.md, artifact.toml), or a project
                // directory without its own CMakeLists.
                Err(error) if matches!(error.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                    continue
                }
                Err(source) => return Err(CatalogError::Read { path, source }),
            };
            let project = parse_project(&cmake, &text)
                .map_err(|message| CatalogError::BadCheckoutFile { path: path.clone(), message })?;
            sources.projects.extend(project);
        }
    }
    sources.projects.sort_by(|a, b| a.cmake.cmp(&b.cmake));
    let llvm = root.join(LLVM_VERSION_CMAKE);
    sources.llvm_version = match crate::input::metadata_file::read_metadata_file(&llvm) {
        Ok(text) => {
            parse_llvm_version(&text).map_err(|message| CatalogError::BadCheckoutFile { path: llvm, message })?
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(source) => return Err(CatalogError::Read { path: llvm, source }),
    };
    sources.llvm_version_source = sources.llvm_version.as_ref().map(|_| LLVM_VERSION_CMAKE.to_owned());
    Ok(sources)
}

/// LLVM's version as a build spells it, when its checkout has no LLVM source (TheRock's
/// `compiler/amd-llvm` is a submodule a checkout may lack): the LLVM library's SONAME
/// (`libLLVM.so.22.0git`, or `libLLVM-15.so` before LLVM 17) or clang's resource directory
/// (`lib/llvm/lib/clang/15.0.7/`, `lib/llvm/lib/clang/22/`), among `paths` (a build's
/// files, relative to its prefix), with the path it was read from. The most precise wins:
/// `15.0.7` from the resource directory over `15` from the SONAME.
pub fn llvm_version_of_build<'a>(paths: impl IntoIterator<Item = &'a str>) -> Option<(String, String)> {
    let mut best: Option<(String, String)> = None;
    for path in paths {
        let Some((_, inside)) = path.split_once("lib/llvm/lib/") else { continue };
        let found = if let Some(rest) = inside.strip_prefix("clang/") {
            let version = rest.split('/').next().unwrap_or(rest);
            let source = format!("lib/llvm/lib/clang/{version}/");
            Some((version.to_owned(), source))
        } else if let Some(version) = inside.strip_prefix("libLLVM.so.") {
            Some((version.to_owned(), format!("lib/llvm/lib/{inside}")))
        } else {
            let version = inside.strip_prefix("libLLVM-").and_then(|rest| rest.strip_suffix(".so"));
            version.map(|version| (version.to_owned(), format!("lib/llvm/lib/{inside}")))
        };
        let Some((version, source)) = found else { continue };
        let is_version = version.starts_with(|c: char| c.is_ascii_digit())
            && version.chars().all(|c| c.is_ascii_alphanumeric() || c == '.');
        if is_version && best.as_ref().is_none_or(|(kept, _)| version.len() > kept.len()) {
            best = Some((version, source));
        }
    }
    best
}

/// The source archive and libraries of one project file; `None` when it fetches nothing.
fn parse_project(cmake: &str, text: &str) -> Result<Option<SourceProject>, String> {
    let tokens = tokenize(text)?;
    let variables = set_calls(&tokens);
    let value_after = |keyword: &str| {
        tokens.windows(2).find_map(|pair| match pair {
            [Token::Word(word), Token::Word(value) | Token::Quoted(value)] if word == keyword => {
                Some(substitute(value, &variables))
            }
            _ => None,
        })
    };
    let Some(url) = value_after("URL") else { return Ok(None) };
    let archive = url.rsplit('/').next().unwrap_or_default();
    // An archive named by a commit names no version: the project is its directory's.
    let directory = cmake.rsplit('/').nth(1).unwrap_or(cmake);
    let (name, version) = match name_and_version(archive) {
        Some((name, version)) => (name, Some(version)),
        None => (directory.to_owned(), None),
    };
    let hash = value_after("URL_HASH").and_then(|hash| parse_hash(&hash));
    let mut libraries = Vec::new();
    let mut in_names = false;
    for token in &tokens {
        match token {
            Token::Word(word) if word == "LIB_NAMES" => in_names = true,
            Token::Word(word) | Token::Quoted(word) if in_names && !is_keyword(word) => {
                libraries.push(substitute(word, &variables))
            }
            _ => in_names = false,
        }
    }
    libraries.sort();
    libraries.dedup();
    Ok(Some(SourceProject { cmake: cmake.to_owned(), name, version, url, hash, libraries }))
}

/// Keywords of TheRock's cmake functions are upper case (`LIB_NAMES`, `PATH`).
fn is_keyword(word: &str) -> bool {
    !word.is_empty() && word.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `set(NAME value)` calls with one value, in file order (a later one wins).
fn set_calls(tokens: &[Token]) -> BTreeMap<String, String> {
    let mut variables = BTreeMap::new();
    for call in tokens.windows(5) {
        if let [Token::Word(set), Token::Open, Token::Word(name), Token::Word(value) | Token::Quoted(value), Token::Close] =
            call
        {
            if set.eq_ignore_ascii_case("set") {
                let value = substitute(value, &variables);
                variables.insert(name.clone(), value);
            }
        }
    }
    variables
}

/// `${NAME}` replaced by the variable's value; an unknown variable stays as it is written.
fn substitute(text: &str, variables: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(length) = rest[start..].find('}') else { break };
        let name = &rest[start + 2..start + length];
        out.push_str(&rest[..start]);
        match variables.get(name) {
            Some(value) => out.push_str(value),
            None => out.push_str(&rest[start..=start + length]),
        }
        rest = &rest[start + length + 1..];
    }
    out.push_str(rest);
    out
}

/// `SHA256=hex` → (`SHA-256`, lower-case hex), when the hex has the algorithm's length.
fn parse_hash(text: &str) -> Option<(&'static str, String)> {
    let (algorithm, hex) = text.split_once('=')?;
    let (name, length) = match algorithm.to_ascii_uppercase().as_str() {
        "SHA256" => ("SHA-256", 64),
        "SHA384" => ("SHA-384", 96),
        "SHA512" => ("SHA-512", 128),
        _ => return None,
    };
    (hex.len() == length && hex.bytes().all(|byte| byte.is_ascii_hexdigit())).then(|| (name, hex.to_ascii_lowercase()))
}

/// `numactl-2.0.19.tar.gz` → (`numactl`, `2.0.19`): the version is the first `-` part that
/// starts with a digit, with all that follows it. GitLab's archives repeat the project
/// (`libdrm-libdrm-2.4.134`), said once. `None` when no part is a version.
fn name_and_version(archive: &str) -> Option<(String, String)> {
    let stem = [".tar.gz", ".tar.bz2", ".tar.xz", ".tar.zst", ".tgz", ".tar", ".zip"]
        .iter()
        .find_map(|extension| archive.strip_suffix(extension))
        .unwrap_or(archive);
    let parts: Vec<&str> = stem.split('-').collect();
    let at = (1..parts.len()).find(|&index| parts[index].starts_with(|c: char| c.is_ascii_digit()))?;
    let name = parts[..at].join("-");
    let name = match name.split_once('-') {
        Some((first, second)) if first == second => first.to_owned(),
        _ => name,
    };
    Some((name, parts[at..].join("-")))
}

/// `LLVM_VERSION_{MAJOR,MINOR,PATCH}` and `LLVM_VERSION_SUFFIX` → `22.0.0git`; `None`
/// when the file sets no major version.
fn parse_llvm_version(text: &str) -> Result<Option<String>, String> {
    let variables = set_calls(&tokenize(text)?);
    let part = |name: &str| variables.get(&format!("LLVM_VERSION_{name}")).cloned();
    let Some(major) = part("MAJOR") else { return Ok(None) };
    let numbers = [major, part("MINOR").unwrap_or_else(|| "0".into()), part("PATCH").unwrap_or_else(|| "0".into())];
    if !numbers.iter().all(|number| !number.is_empty() && number.bytes().all(|byte| byte.is_ascii_digit())) {
        return Err(format!("LLVM version parts {numbers:?} are not numbers"));
    }
    Ok(Some(format!("{}{}", numbers.join("."), part("SUFFIX").unwrap_or_default())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shaped like TheRock's `third-party/sysdeps/linux/numactl/CMakeLists.txt`.
    const NUMACTL: &str = r#"
if(NOT CMAKE_SOURCE_DIR STREQUAL CMAKE_CURRENT_SOURCE_DIR)
    therock_subproject_fetch(therock-numactl-sources
      SOURCE_DIR "${_source_dir}"
      # Originally mirrored from: "https://github.com/numactl/numactl/releases/download/v2.0.19/numactl-2.0.19.tar.gz"
      URL "https://mirror.example/numactl-2.0.19.tar.gz"
      URL_HASH "SHA256=F2672A0381CB59196E9C246BF8BCC43D5568BC457700A697F1A1DF762B9AF884"
      TOUCH "${_download_stamp}"
    )
    therock_test_validate_shared_lib(
      PATH build/dist/lib/rocm_sysdeps/lib
      LIB_NAMES libnuma.so
    )
    return()
endif()
"#;

    #[test]
    fn a_project_file_gives_its_archive_hash_and_libraries() {
        let project = parse_project("third-party/sysdeps/linux/numactl/CMakeLists.txt", NUMACTL)
            .expect("parses")
            .expect("fetches");
        assert_eq!((project.name.as_str(), project.version.as_deref()), ("numactl", Some("2.0.19")));
        assert_eq!(project.url, "https://mirror.example/numactl-2.0.19.tar.gz");
        let hash = ("SHA-256", "f2672a0381cb59196e9c246bf8bcc43d5568bc457700a697f1a1df762b9af884".to_owned());
        assert_eq!(project.hash, Some(hash));
        assert_eq!(project.libraries, ["libnuma.so"]);
    }

    #[test]
    fn variables_are_substituted_and_several_library_lists_joined() {
        let text = r#"
    set(_xz_url "https://mirror.example/xz-5.8.1.tar.bz2")
    therock_subproject_fetch(x URL "${_xz_url}" URL_HASH SHA512=abc)
    therock_test_validate_shared_lib(PATH lib LIB_NAMES libmenuw.so)
    therock_test_validate_shared_lib(PATH lib LIB_NAMES libncursesw.so libpanelw.so)
"#;
        let project = parse_project("p/CMakeLists.txt", text).expect("parses").expect("fetches");
        assert_eq!((project.name.as_str(), project.version.as_deref()), ("xz", Some("5.8.1")));
        assert_eq!(project.hash, None, "a SHA-512 of three digits is no hash");
        assert_eq!(project.libraries, ["libmenuw.so", "libncursesw.so", "libpanelw.so"]);
        assert_eq!(parse_project("p/CMakeLists.txt", "add_subdirectory(x)\n"), Ok(None));
        assert!(parse_project("p/CMakeLists.txt", "set(x \"unterminated)").is_err());
    }

    #[test]
    fn archive_names() {
        let check = |archive: &str, expect: Option<(&str, &str)>| {
            let expect = expect.map(|(name, version)| (name.to_owned(), version.to_owned()));
            assert_eq!(name_and_version(archive), expect, "{archive}");
        };
        check("numactl-2.0.19.tar.gz", Some(("numactl", "2.0.19")));
        check("libdrm-libdrm-2.4.134.tar.bz2", Some(("libdrm", "2.4.134")));
        check("util-linux-2.42.1.tar.gz", Some(("util-linux", "2.42.1")));
        check("sqlite-amalgamation-3510300.zip", Some(("sqlite-amalgamation", "3510300")));
        check("libnl-3.12.0.tar.gz", Some(("libnl", "3.12.0")));
        check("libbacktrace-b9e40069c0b47a722286b94eb5231f7f05c08713.zip", None);
        let by_commit = "therock_subproject_fetch(x URL https://m.example/libbacktrace-b9e40069.zip)";
        let project = parse_project("third-party/sysdeps/common/libbacktrace/CMakeLists.txt", by_commit);
        let project = project.expect("parses").expect("fetches");
        assert_eq!((project.name.as_str(), project.version), ("libbacktrace", None));
    }

    #[test]
    fn llvm_version() {
        let text = "if(NOT DEFINED LLVM_VERSION_MAJOR)\n  set(LLVM_VERSION_MAJOR 22)\nendif()\n\
                    set(LLVM_VERSION_MINOR 0)\nset(LLVM_VERSION_PATCH 0)\nset(LLVM_VERSION_SUFFIX git)\n";
        assert_eq!(parse_llvm_version(text), Ok(Some("22.0.0git".to_owned())));
        assert_eq!(parse_llvm_version("set(OTHER 1)"), Ok(None));
        assert!(parse_llvm_version("set(LLVM_VERSION_MAJOR x)").is_err());
    }

    #[test]
    fn llvm_version_of_a_build() {
        let check = |paths: &[&str], expect: Option<(&str, &str)>| {
            let expect = expect.map(|(version, source)| (version.to_owned(), source.to_owned()));
            assert_eq!(llvm_version_of_build(paths.iter().copied()), expect, "{paths:?}");
        };
        check(&["lib/llvm/lib/libLLVM-15.so"], Some(("15", "lib/llvm/lib/libLLVM-15.so")));
        check(
            &["lib/llvm/lib/libLLVM-15.so", "lib/llvm/lib/clang/15.0.7/include/stddef.h"],
            Some(("15.0.7", "lib/llvm/lib/clang/15.0.7/")),
        );
        check(
            &["lib/llvm/lib/clang/22/include/stddef.h", "lib/llvm/lib/libLLVM.so.22.0git"],
            Some(("22.0git", "lib/llvm/lib/libLLVM.so.22.0git")),
        );
        check(&["lib/llvm/lib/clang/current/x.h", "lib/llvm/lib/libLLVM.so", "lib/llvm/bin/clang"], None);
    }

    #[test]
    fn reads_a_checkout_and_skips_what_is_no_project() {
        let temp = tempfile::tempdir().expect("tempdir");
        let root = temp.path();
        fs_err::create_dir_all(root.join("third-party/sysdeps/linux/numactl")).expect("mkdir");
        fs_err::create_dir_all(root.join("third-party/sysdeps/linux/amd-mesa")).expect("mkdir");
        fs_err::write(root.join("third-party/sysdeps/linux/README.md"), "x").expect("write");
        fs_err::write(root.join("third-party/sysdeps/linux/numactl/CMakeLists.txt"), NUMACTL).expect("write");
        fs_err::write(root.join("third-party/sysdeps/linux/amd-mesa/CMakeLists.txt"), "add_subdirectory(x)")
            .expect("write");
        let sources = read_third_party(root).expect("reads");
        let cmakes: Vec<&str> = sources.projects.iter().map(|project| project.cmake.as_str()).collect();
        assert_eq!(cmakes, ["third-party/sysdeps/linux/numactl/CMakeLists.txt"]);
        assert_eq!(sources.llvm_version, None);
        assert_eq!(sources.llvm_version_source, None);
        assert_eq!(read_third_party(&root.join("nowhere")).expect("nothing to read"), ThirdPartySources::default());
    }
}
