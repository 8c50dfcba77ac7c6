//! Text from the packages (link targets, names) made safe to print: control characters as
//! escapes, so a hostile name cannot rewrite the terminal or forge a line of the report.
//!
//! A deliberate second copy of the packager's `escape`: the gate shares no code with what
//! it judges (README, Architecture), so a name the writer lets through unescaped cannot
//! reach the gate's report unescaped too.
//!
//! Owns: the escaping. Does not own: what is reported (`report`).

/// `text` with every control character escaped (`\n`, `\t`, `\u{1b}`); the rest as is.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(super::escape("a\nb\u{1b}[31m caf\u{e9}"), "a\\nb\\u{1b}[31m caf\u{e9}");
    }
}
