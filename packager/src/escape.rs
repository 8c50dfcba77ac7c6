//! Text from the input (file names, SONAMEs, directory names) made safe to print: control
//! characters as escapes and invalid UTF-8 bytes as `\xNN`, so a hostile name cannot
//! rewrite the terminal or forge a second line of a message.
//!
//! Owns: the escaping. Does not own: deciding which names are refused (`catalog`, `plan`).

use std::path::Path;

/// `text` with every control character escaped (`\n`, `\t`, `\u{1b}`); the rest as is.
pub fn escape(text: &str) -> String {
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

/// A path for a message: [`escape`] on its UTF-8 parts, each invalid byte as `\xNN`.
pub fn escape_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut text = String::new();
    for chunk in path.as_os_str().as_bytes().utf8_chunks() {
        text.push_str(&escape(chunk.valid()));
        for byte in chunk.invalid() {
            text.push_str(&format!("\\x{byte:02x}"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expect: &str) {
        assert_eq!(escape(input), expect);
    }

    #[test]
    fn control_characters_are_escaped() {
        check("plain-name_1.so", "plain-name_1.so");
        check("a\nb", "a\\nb");
        check("\u{1b}[31mred", "\\u{1b}[31mred");
        check("tab\there", "tab\\there");
        check("caf\u{e9}", "caf\u{e9}");
        check("\u{7f}", "\\u{7f}");
    }

    #[test]
    fn invalid_bytes_are_shown_as_hex() {
        use std::os::unix::ffi::OsStrExt;
        let path = Path::new(std::ffi::OsStr::from_bytes(b"lib/\xffx\n"));
        assert_eq!(escape_path(path), "lib/\\xffx\\n");
    }
}
