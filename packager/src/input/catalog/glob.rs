//! The include/exclude glob language of SPEC §1: `*` and `?` match within one segment,
//! `**` matches any number of whole segments (leading `**/`, inner `/**/`, trailing `/**`).
//!
//! Nothing else is special: `[`, `{` and `\` are literal characters. A `**` that shares its
//! segment with other characters (`a**`, `**.so`) is refused rather than guessed at.
//! Matching is segment-wise backtracking, so it needs no regex engine.

use super::CatalogError;

/// A compiled glob over '/'-separated relative paths.
#[derive(Clone, Debug)]
pub struct Glob {
    pattern: String,
    segments: Vec<Segment>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    /// `**`: zero or more whole path segments.
    AnySegments,
    /// A segment pattern where `*` matches any run and `?` one character, never `/`.
    Pattern(Vec<char>),
}

impl Glob {
    pub fn new(pattern: &str) -> Result<Glob, CatalogError> {
        let bad = |reason: &str| CatalogError::BadGlob { pattern: pattern.to_owned(), reason: reason.to_owned() };
        if pattern.is_empty() {
            return Err(bad("the pattern is empty"));
        }
        if pattern.starts_with('/') {
            return Err(bad("patterns are relative paths and cannot start with `/`"));
        }
        let mut segments = Vec::new();
        for text in pattern.split('/') {
            let segment = match text {
                "" => return Err(bad("empty path segment (`//` or a trailing `/`)")),
                "**" => Segment::AnySegments,
                _ if text.contains("**") => {
                    return Err(bad("`**` must be a whole path segment (`**/x`, `x/**/y`, `x/**`)"));
                }
                _ => Segment::Pattern(text.chars().collect()),
            };
            // `**/**` means the same as `**`; keeping one avoids needless backtracking.
            if !(segment == Segment::AnySegments && segments.last() == Some(&Segment::AnySegments)) {
                segments.push(segment);
            }
        }
        Ok(Glob { pattern: pattern.to_owned(), segments })
    }

    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether the whole of `path` (a '/'-separated relative path) matches.
    pub fn matches(&self, path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').collect();
        match_segments(&self.segments, &parts)
    }
}

fn match_segments(pattern: &[Segment], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((Segment::AnySegments, rest)) => (0..=path.len()).any(|skip| match_segments(rest, &path[skip..])),
        Some((Segment::Pattern(segment), rest)) => match path.split_first() {
            Some((first, path_rest)) => match_segment(segment, first) && match_segments(rest, path_rest),
            None => false,
        },
    }
}

/// Wildcard match of one segment: the classic two-pointer algorithm that backtracks only
/// to the last `*`, so it is linear-ish and never exponential.
fn match_segment(pattern: &[char], text: &str) -> bool {
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    let mut last_star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                last_star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match last_star {
                Some((star_p, star_t)) => {
                    p = star_p + 1;
                    t = star_t + 1;
                    last_star = Some((star_p, star_t + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pattern: &str, path: &str, expect: bool) {
        let glob = Glob::new(pattern).expect("valid test pattern");
        assert_eq!(glob.matches(path), expect, "{pattern:?} on {path:?}");
    }

    fn check_bad(pattern: &str) {
        assert!(matches!(Glob::new(pattern), Err(CatalogError::BadGlob { .. })), "{pattern:?} should be refused");
    }

    #[test]
    fn literal() {
        check("bin/hipcc", "bin/hipcc", true);
        check("bin/hipcc", "bin/hipcc2", false);
        check("bin/hipcc", "bin", false);
        check("bin", "bin/hipcc", false);
    }

    #[test]
    fn star_stays_in_one_segment() {
        check("bin/rocprof-*", "bin/rocprof-sys-run", true);
        check("bin/rocprof-*", "bin/rocprof-", true);
        check("bin/rocprof-*", "bin/sub/rocprof-x", false);
        check("bin/rocprof-*", "bin/rocprof-x/y", false);
        check("lib/librocprof-sys*", "lib/librocprof-sys.so.1.0.0", true);
        check("lib/*.so", "lib/a/b.so", false);
        check("*", "anything", true);
        check("*", "a/b", false);
    }

    #[test]
    fn star_backtracks() {
        check("lib/libprofiler-hub.so*", "lib/libprofiler-hub.so.1", true);
        check("*a*b", "xaxxab", true);
        check("*a*b", "xaxxa", false);
        check("a*a*a", "aaa", true);
        check("a*a*a", "aa", false);
    }

    #[test]
    fn question_mark_is_one_character() {
        check("lib/lib?.so", "lib/libx.so", true);
        check("lib/lib?.so", "lib/lib.so", false);
        check("lib/lib?.so", "lib/libxy.so", false);
        check("a?b", "a/b", false);
        check("gfx9?a", "gfx90a", true);
    }

    #[test]
    fn double_star_leading() {
        check("**/cmake/**", "lib/cmake/hip/hip-config.cmake", true);
        check("**/cmake/**", "cmake/x", true);
        check("**/cmake/**", "cmake", true);
        check("**/cmake/**", "lib/cmakefoo/x", false);
        check("**/x.h", "x.h", true);
        check("**/x.h", "include/deep/x.h", true);
    }

    #[test]
    fn double_star_middle() {
        check("share/**/rocprofiler-systems/**", "share/doc/rocprofiler-systems/x", true);
        check("share/**/rocprofiler-systems/**", "share/rocprofiler-systems/x", true);
        check("share/**/rocprofiler-systems/**", "share/a/b/c/rocprofiler-systems/d/e", true);
        check("share/**/rocprofiler-systems/**", "share/doc/rocprofiler-compute/x", false);
        check("share/**/rocprofiler-systems/**", "lib/rocprofiler-systems/x", false);
    }

    #[test]
    fn double_star_trailing() {
        check("lib/rocprofiler-systems/**", "lib/rocprofiler-systems/a/b", true);
        check("lib/rocprofiler-systems/**", "lib/rocprofiler-systems/a", true);
        // Zero segments: the directory itself is matched too.
        check("lib/rocprofiler-systems/**", "lib/rocprofiler-systems", true);
        check("lib/rocprofiler-systems/**", "lib/rocprofiler-systemsX/a", false);
        check("**", "a/b/c", true);
        check("**/**", "a", true);
    }

    #[test]
    fn other_characters_are_literal() {
        check("lib/[ab].so", "lib/[ab].so", true);
        check("lib/[ab].so", "lib/a.so", false);
        check("lib/{a,b}", "lib/a", false);
    }

    #[test]
    fn refuses_bad_patterns() {
        check_bad("");
        check_bad("/abs/path");
        check_bad("a//b");
        check_bad("a/");
        check_bad("a**");
        check_bad("**.so");
        check_bad("lib/***/x");
    }
}
