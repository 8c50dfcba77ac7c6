//! PEP 440 versions: every package of a build shares one version, and a bad one is refused
//! before anything is written.
//!
//! Owns: parsing a version the way pip does, its normal form, and which versions are one
//! release (a post release is its release, SPEC §4). `verify --dist` judges
//! built file names with the same function, so the packager never writes a version that
//! its own checker would flag.

/// Checks that `version` is a PEP 440 version already in normal form (SPEC §3: every file
/// name and `==` pin carries it as is). Returns the reason when it is not, naming the
/// normal form when there is one (`07.1` → `use 7.1`).
pub fn check_pep440(version: &str) -> Result<(), String> {
    let normal = normalize_pep440(version)?;
    if normal == version {
        Ok(())
    } else {
        Err(format!("not in normal form: use {normal}"))
    }
}

/// The normal form of a PEP 440 version (what pip, indexes and `packaging.version` call
/// it), or why `version` is not one.
///
/// Accepts what PEP 440 accepts: any case, a leading `v`, surrounding whitespace,
/// `-`/`_`/`.` separators, the alternative spellings (`alpha`, `pre`, `rev`, ...),
/// implicit numbers (`1.0.dev`) and leading zeros. The normal form has none of these:
/// `[N!]N(.N)*[{a|b|rc}N][.postN][.devN][+local]`, an epoch only when it is not 0.
pub fn normalize_pep440(version: &str) -> Result<String, String> {
    let text = version.trim().to_ascii_lowercase();
    let mut cursor = Cursor { text: &text, at: 0 };
    cursor.eat("v");
    let release_needed = "it must start with a release number such as 7.12.0";
    let first = cursor.number().ok_or(release_needed)?;
    let (epoch, mut release) =
        if cursor.eat("!") { (Some(first), vec![cursor.number().ok_or(release_needed)?]) } else { (None, vec![first]) };
    while cursor.rest().starts_with('.') && cursor.rest()[1..].starts_with(|c: char| c.is_ascii_digit()) {
        cursor.eat(".");
        release.push(cursor.number().expect("a digit follows the dot"));
    }

    let mut normal = String::new();
    if let Some(epoch) = epoch.filter(|epoch| *epoch != "0") {
        normal.push_str(&format!("{epoch}!"));
    }
    normal.push_str(&release.join("."));
    // Longer spellings first: `alpha` before `a`, `preview` before `pre`.
    let pre_labels = [
        ("alpha", "a"),
        ("a", "a"),
        ("beta", "b"),
        ("b", "b"),
        ("preview", "rc"),
        ("pre", "rc"),
        ("rc", "rc"),
        ("c", "rc"),
    ];
    if let Some((label, number)) = cursor.labelled(pre_labels) {
        normal.push_str(&format!("{label}{number}"));
    }
    // `1.0-1` is an implicit post-release; otherwise a label (`post`, `rev`, `r`).
    let implicit_post = cursor.rest().starts_with('-') && cursor.rest()[1..].starts_with(|c: char| c.is_ascii_digit());
    if implicit_post {
        cursor.eat("-");
        normal.push_str(&format!(".post{}", cursor.number().expect("a digit follows the dash")));
    } else if let Some((_, number)) = cursor.labelled([("post", "post"), ("rev", "post"), ("r", "post")]) {
        normal.push_str(&format!(".post{number}"));
    }
    if let Some((_, number)) = cursor.labelled([("dev", "dev")]) {
        normal.push_str(&format!(".dev{number}"));
    }
    if cursor.eat("+") {
        let local = cursor.rest();
        let parts: Vec<&str> = local.split(['.', '-', '_']).collect();
        if parts.iter().any(|part| part.is_empty() || !part.bytes().all(|b| b.is_ascii_alphanumeric())) {
            return Err(format!("local part {local:?} must be dot-separated letters and digits"));
        }
        // Numeric parts compare as numbers, so their leading zeros go too.
        let parts: Vec<&str> = parts
            .into_iter()
            .map(|part| if part.bytes().all(|b| b.is_ascii_digit()) { strip_zeros(part) } else { part })
            .collect();
        normal.push('+');
        normal.push_str(&parts.join("."));
        cursor.at = text.len();
    }
    if !cursor.rest().is_empty() {
        return Err(format!(
            "unexpected {:?} (PEP 440 allows e.g. 7.12.0, 7.12.0rc1, 7.12.0.dev0, 7.12.0.post1+local)",
            cursor.rest()
        ));
    }
    Ok(normal)
}

/// The final release a version in normal form belongs to when it is that release or a post
/// release of it (`7.12.0`, `7.12.0.post1` → `7.12.0`); `None` for dev, pre and local
/// versions, which only ever match themselves (TheRock's docs/packaging/versioning.md).
pub fn final_release(version: &str) -> Option<&str> {
    let (release, post) = match version.rsplit_once(".post") {
        Some((release, post)) => (release, Some(post)),
        None => (version, None),
    };
    let numbers = match release.split_once('!') {
        Some((epoch, rest)) if is_number(epoch) => rest,
        // No epoch, or a malformed one that the check below refuses.
        _ => release,
    };
    let release_ok = numbers.split('.').all(is_number);
    let post_ok = post.is_none_or(is_number);
    (release_ok && post_ok).then_some(release)
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit())
}

/// Whether two versions are one release (SPEC §4): equal, or the same final release up to
/// a `.postN`. `7.12.0` and `7.12.0.post1` are; `7.12.0` and `7.12.1` never are.
pub fn same_release(first: &str, second: &str) -> bool {
    first == second || final_release(first).is_some_and(|release| final_release(second) == Some(release))
}

/// The version specifier a package of a set pins another with (SPEC §2, §3): `==V` for a
/// dev or pre release, `>=R,==R.*` for a final release `R` (or its post releases), so one
/// package republished as `R.postN` joins the set of `R`.
pub fn release_specifier(version: &str) -> String {
    match final_release(version) {
        Some(release) => format!(">={release},=={release}.*"),
        None => format!("=={version}"),
    }
}

/// `007` → `7`, `000` → `0`.
fn strip_zeros(digits: &str) -> &str {
    let stripped = digits.trim_start_matches('0');
    if stripped.is_empty() {
        "0"
    } else {
        stripped
    }
}

/// A position in the lower-cased, trimmed version text. It only ever steps over ASCII,
/// so it stays on a character boundary.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    fn eat(&mut self, prefix: &str) -> bool {
        let found = self.rest().starts_with(prefix);
        if found {
            self.at += prefix.len();
        }
        found
    }

    /// A run of digits, leading zeros dropped.
    fn number(&mut self) -> Option<&'a str> {
        let digits = self.rest().bytes().take_while(u8::is_ascii_digit).count();
        let number = (digits > 0).then(|| strip_zeros(&self.rest()[..digits]));
        self.at += digits;
        number
    }

    /// `[-_.]? label ([-_.]? N)?`, the first label of `labels` that matches, as its
    /// normal spelling and number (0 when implicit). Nothing is consumed without a match.
    fn labelled(
        &mut self,
        labels: impl IntoIterator<Item = (&'static str, &'static str)>,
    ) -> Option<(&'static str, &'a str)> {
        let start = self.at;
        self.separator();
        let Some((label, normal)) = labels.into_iter().find(|(label, _)| self.rest().starts_with(label)) else {
            self.at = start;
            return None;
        };
        self.at += label.len();
        let before_number = self.at;
        self.separator();
        match self.number() {
            Some(number) => Some((normal, number)),
            None => {
                // A separator with no number after it belongs to the next part.
                self.at = before_number;
                Some((normal, "0"))
            }
        }
    }

    fn separator(&mut self) {
        if self.rest().starts_with(['-', '_', '.']) {
            self.at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_normal_forms() {
        let versions =
            ["7.12.0", "7.12.0.dev0", "7.12.0rc1", "7.12.0a2.post1.dev3", "1!2.0", "7.0.0+abc.1", "7", "1.0.post1"];
        for version in versions {
            assert_eq!(check_pep440(version), Ok(()), "{version}");
            assert_eq!(normalize_pep440(version).as_deref(), Ok(version), "{version}");
        }
    }

    #[test]
    fn names_the_normal_form_of_other_spellings() {
        let cases = [
            ("7.12.0-dev0", "7.12.0.dev0"),
            ("7.12.0.DEV0", "7.12.0.dev0"),
            ("7.12.0dev", "7.12.0.dev0"),
            ("07.1", "7.1"),
            ("7.0+ABC", "7.0+abc"),
            ("7.0+abc-01_x", "7.0+abc.1.x"),
            ("v7.0", "7.0"),
            ("7.0-beta", "7.0b0"),
            ("7.0.dev", "7.0.dev0"),
            ("7.0 ", "7.0"),
            ("7.0\n", "7.0"),
            ("1.0-1", "1.0.post1"),
            ("1.0.rev2", "1.0.post2"),
            ("1.0preview.3", "1.0rc3"),
            ("1.0-c1_post.2-dev3", "1.0rc1.post2.dev3"),
            ("0!1.0", "1.0"),
            ("007!01.002", "7!1.2"),
        ];
        for (version, normal) in cases {
            assert_eq!(normalize_pep440(version).as_deref(), Ok(normal), "{version:?}");
            assert_eq!(check_pep440(version), Err(format!("not in normal form: use {normal}")));
        }
    }

    #[test]
    fn post_releases_are_their_release() {
        for (first, second, same) in [
            ("7.12.0", "7.12.0.post1", true),
            ("7.12.0.post1", "7.12.0.post2", true),
            ("1!7.12.0", "1!7.12.0.post3", true),
            ("7.12.0", "7.12.1", false),
            ("7.12.0", "7.12.0.1", false),
            ("7.12.0.dev0", "7.12.0.post1.dev0", false),
            ("7.12.0rc1", "7.12.0rc1.post1", false),
            ("7.12.0+abc", "7.12.0.post1", false),
            ("7.12.0.dev0", "7.12.0.dev0", true),
        ] {
            assert_eq!(same_release(first, second), same, "{first} {second}");
            assert_eq!(same_release(second, first), same, "{second} {first}");
        }
        assert_eq!(release_specifier("7.12.0"), ">=7.12.0,==7.12.0.*");
        assert_eq!(release_specifier("7.12.0.post2"), ">=7.12.0,==7.12.0.*");
        assert_eq!(release_specifier("7.12.0.dev0"), "==7.12.0.dev0");
        assert_eq!(release_specifier("7.12.0rc1"), "==7.12.0rc1");
    }

    #[test]
    fn rejects_others_with_the_reason() {
        let cases = [
            ("", "must start with a release number"),
            ("garbage", "must start with a release number"),
            ("1!", "must start with a release number"),
            ("7..0", "unexpected \"..0\""),
            ("7.0.", "unexpected \".\""),
            ("7.0+", "local part \"\""),
            ("7.0+a..b", "local part \"a..b\""),
            ("7.0.0.dev0\"x", "unexpected \"\\\"x\""),
            ("7.0-beta-gamma", "unexpected \"-gamma\""),
            ("7.0é", "unexpected \"é\""),
        ];
        for (version, reason) in cases {
            let error = check_pep440(version).expect_err(version);
            assert!(error.contains(reason), "{version:?}: {error}");
        }
    }
}
