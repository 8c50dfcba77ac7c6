//! A TheRock checkout: its root, `version.json`, and the family → target table of
//! `cmake/therock_amdgpu_targets.cmake`.
//!
//! The cmake file is read, not run: each `therock_add_amdgpu_target(gfxNNN "name" FAMILY
//! fam... [OTHER_KEYWORD ...])` call gives one target id and its families. Every target is
//! also a family of its own, as the cmake function makes it.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use super::CatalogError;
use crate::targets::TargetId;

pub const VERSION_JSON: &str = "version.json";
pub const AMDGPU_TARGETS_CMAKE: &str = "cmake/therock_amdgpu_targets.cmake";

/// The nearest directory at or above `start` holding both `version.json` and
/// `cmake/therock_amdgpu_targets.cmake`.
pub fn find_checkout(start: &Path) -> Option<PathBuf> {
    start.ancestors().find(|dir| is_checkout(dir)).map(Path::to_path_buf)
}

/// Whether `dir` is the root of a TheRock checkout: it holds the two files we read.
pub fn is_checkout(dir: &Path) -> bool {
    dir.join(VERSION_JSON).is_file() && dir.join(AMDGPU_TARGETS_CMAKE).is_file()
}

/// The default package version, `{rocm-version}.dev0`, from the checkout's `version.json`.
pub fn read_version(root: &Path) -> Result<String, CatalogError> {
    let path = root.join(VERSION_JSON);
    let text = read_checkout_file(root, &path)?;
    parse_version(&text).map_err(|message| CatalogError::BadCheckoutFile { path, message })
}

/// Family (or target) → its targets, sorted and de-duplicated, from the checkout's
/// `cmake/therock_amdgpu_targets.cmake`.
pub fn read_amdgpu_targets(root: &Path) -> Result<BTreeMap<String, Vec<TargetId>>, CatalogError> {
    let path = root.join(AMDGPU_TARGETS_CMAKE);
    let text = read_checkout_file(root, &path)?;
    parse_amdgpu_targets(&text).map_err(|message| CatalogError::BadCheckoutFile { path, message })
}

fn read_checkout_file(root: &Path, path: &Path) -> Result<String, CatalogError> {
    match crate::small_file::read_metadata_file(path) {
        Ok(text) => Ok(text),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            Err(CatalogError::NotACheckout { path: root.to_owned() })
        }
        Err(source) => Err(CatalogError::Read { path: path.to_owned(), source }),
    }
}

fn parse_version(text: &str) -> Result<String, String> {
    let json: serde_json::Value = serde_json::from_str(text).map_err(|error| error.to_string())?;
    let version = json.get("rocm-version").and_then(serde_json::Value::as_str);
    let version = version.ok_or("no string `rocm-version` key")?.trim();
    if version.is_empty() {
        return Err("`rocm-version` is empty".to_owned());
    }
    Ok(format!("{version}.dev0"))
}

const CALL: &str = "therock_add_amdgpu_target";

fn parse_amdgpu_targets(text: &str) -> Result<BTreeMap<String, Vec<TargetId>>, String> {
    let tokens = tokenize(text)?;
    let mut table: BTreeMap<String, Vec<TargetId>> = BTreeMap::new();
    let mut index = 0;
    while index < tokens.len() {
        // A call is the bare word followed by `(`; `function(therock_add_amdgpu_target ...)`
        // has it as an argument instead, which this skips.
        if !(tokens[index] == Token::Word(CALL.to_owned()) && tokens.get(index + 1) == Some(&Token::Open)) {
            index += 1;
            continue;
        }
        let start = index + 2;
        let end = (start..tokens.len())
            .find(|&at| tokens[at] == Token::Close)
            .ok_or_else(|| format!("unclosed `{CALL}(` call"))?;
        let args: Vec<&Token> = tokens[start..end].iter().collect();
        index = end + 1;
        // A call for something that is no GPU target id (an LLVM generic target such as
        // `gfx11-generic`, should the table gain one) has no device wheel to expand to;
        // failing every run from the checkout over it would help nobody.
        let Some((target, families)) = parse_call(&args)? else { continue };
        table.entry(target.to_string()).or_default().push(target.clone());
        for family in families {
            table.entry(family).or_default().push(target.clone());
        }
    }
    for targets in table.values_mut() {
        targets.sort();
        targets.dedup();
    }
    Ok(table)
}

/// `gfxNNN "product name" [KEYWORD values...]...` → the target and its FAMILY values;
/// `None` when the first argument is a name but no target id.
fn parse_call(args: &[&Token]) -> Result<Option<(TargetId, Vec<String>)>, String> {
    let target = match args.first() {
        Some(Token::Word(word)) => match TargetId::parse(word) {
            Some(target) => target,
            None => return Ok(None),
        },
        _ => return Err(format!("a `{CALL}` call without a target name")),
    };
    let mut families = Vec::new();
    let mut in_family = false;
    for arg in args.iter().skip(2) {
        match arg {
            Token::Word(word) if is_keyword(word) => in_family = word == "FAMILY",
            Token::Word(word) | Token::Quoted(word) if in_family => families.push(word.clone()),
            _ => {}
        }
    }
    Ok(Some((target, families)))
}

/// cmake_parse_arguments keywords are upper case; family names always have lower case
/// letters (`gfx110X-all`, `dgpu-all`).
fn is_keyword(word: &str) -> bool {
    word.chars().all(|c| c.is_ascii_uppercase() || c == '_') && !word.is_empty()
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Token {
    Word(String),
    Quoted(String),
    Open,
    Close,
}

/// Just enough of cmake's lexer: words, quoted strings, parentheses, `#` comments.
pub(super) fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            '#' => while chars.next_if(|&c| c != '\n').is_some() {},
            '(' | ')' => {
                chars.next();
                tokens.push(if c == '(' { Token::Open } else { Token::Close });
            }
            '"' => {
                chars.next();
                let mut quoted = String::new();
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => quoted.extend(chars.next()),
                        Some(c) => quoted.push(c),
                        None => return Err("unterminated quoted string".to_owned()),
                    }
                }
                tokens.push(Token::Quoted(quoted));
            }
            c if c.is_whitespace() => {
                chars.next();
            }
            _ => {
                let mut word = String::new();
                while let Some(c) = chars.next_if(|&c| !c.is_whitespace() && !matches!(c, '(' | ')' | '"' | '#')) {
                    word.push(c);
                }
                tokens.push(Token::Word(word));
            }
        }
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_targets(cmake: &str, expect: &[(&str, &[&str])]) {
        let table = parse_amdgpu_targets(cmake).expect("parses");
        let actual: Vec<(&str, Vec<&str>)> = table
            .iter()
            .map(|(family, targets)| (family.as_str(), targets.iter().map(TargetId::as_str).collect()))
            .collect();
        let expect: Vec<(&str, Vec<&str>)> =
            expect.iter().map(|(family, targets)| (*family, targets.to_vec())).collect();
        assert_eq!(actual, expect);
    }

    #[test]
    fn one_call() {
        check_targets(
            r#"therock_add_amdgpu_target(gfx1100 "AMD RX 7900 XTX" FAMILY dgpu-all gfx110X-all gfx110X-dgpu)"#,
            &[
                ("dgpu-all", &["gfx1100"]),
                ("gfx1100", &["gfx1100"]),
                ("gfx110X-all", &["gfx1100"]),
                ("gfx110X-dgpu", &["gfx1100"]),
            ],
        );
    }

    #[test]
    fn calls_span_lines_and_have_other_keywords() {
        let cmake = r#"
# therock_add_amdgpu_target(gfx000 "commented out" FAMILY nope)
function(therock_add_amdgpu_target gfx_target product_name)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "" "" "FAMILY;EXCLUDE_TARGET_PROJECTS")
endfunction()

therock_add_amdgpu_target(gfx942 "MI300A/MI300X CDNA (with parens)"
  FAMILY dcgpu-all gfx94X-all gfx94X-dcgpu  # trailing comment
  EXCLUDE_TARGET_PROJECTS
    hipSPARSELt
)
therock_add_amdgpu_target(gfx1101 "AMD RX 7800 XT" FAMILY dgpu-all gfx110X-all)
therock_add_amdgpu_target(gfx1103 "AMD Radeon 780M Laptop iGPU")
"#;
        check_targets(
            cmake,
            &[
                ("dcgpu-all", &["gfx942"]),
                ("dgpu-all", &["gfx1101"]),
                ("gfx1101", &["gfx1101"]),
                ("gfx1103", &["gfx1103"]),
                ("gfx110X-all", &["gfx1101"]),
                ("gfx942", &["gfx942"]),
                ("gfx94X-all", &["gfx942"]),
                ("gfx94X-dcgpu", &["gfx942"]),
            ],
        );
    }

    #[test]
    fn families_collect_several_targets() {
        let cmake = "therock_add_amdgpu_target(gfx1101 \"b\" FAMILY gfx110X-all)\n\
                     therock_add_amdgpu_target(gfx1100 \"a\" FAMILY gfx110X-all)";
        check_targets(
            cmake,
            &[("gfx1100", &["gfx1100"]), ("gfx1101", &["gfx1101"]), ("gfx110X-all", &["gfx1100", "gfx1101"])],
        );
    }

    #[test]
    fn broken_cmake() {
        assert!(parse_amdgpu_targets("therock_add_amdgpu_target(gfx1100 \"x\" FAMILY a").is_err());
        assert!(parse_amdgpu_targets("therock_add_amdgpu_target(gfx1100 \"x").is_err());
        assert!(parse_amdgpu_targets("therock_add_amdgpu_target()").is_err());
        let generic = "therock_add_amdgpu_target(gfx11-generic \"x\" FAMILY a)\ntherock_add_amdgpu_target(gfx1100 \"y\" FAMILY a)";
        let table = parse_amdgpu_targets(generic).expect("a call for no target id is skipped");
        let family: Vec<&str> = table["a"].iter().map(TargetId::as_str).collect();
        assert_eq!(family, ["gfx1100"]);
        assert!(!table.contains_key("gfx11-generic"));
    }

    #[test]
    fn version() {
        assert_eq!(parse_version(r#"{"rocm-version": "7.12.0"}"#), Ok("7.12.0.dev0".to_owned()));
        assert!(parse_version(r#"{"rocm-version": ""}"#).is_err());
        assert!(parse_version(r#"{"version": "7"}"#).is_err());
        assert!(parse_version("nope").is_err());
    }

    #[test]
    fn finds_the_checkout_root() {
        let temp = tempfile::tempdir().expect("tempdir");
        let root = temp.path().join("TheRock");
        fs_err::create_dir_all(root.join("cmake")).expect("mkdir");
        fs_err::create_dir_all(root.join("build/artifacts")).expect("mkdir");
        fs_err::write(root.join(VERSION_JSON), r#"{"rocm-version": "7.1.0"}"#).expect("write");
        fs_err::write(root.join(AMDGPU_TARGETS_CMAKE), "").expect("write");
        assert_eq!(find_checkout(&root.join("build/artifacts")), Some(root.clone()));
        assert_eq!(find_checkout(&root), Some(root.clone()));
        assert_eq!(find_checkout(temp.path()), None);
        assert_eq!(read_version(&root).expect("version"), "7.1.0.dev0");
        assert!(matches!(read_version(temp.path()), Err(CatalogError::NotACheckout { .. })));
    }
}
