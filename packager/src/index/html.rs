//! The index pages. Links are relative (so `dist/` can move or be served from anywhere),
//! percent-encoded, and carry `#sha256=`; every name is HTML-escaped; order is sorted, so
//! the same `dist/` always gives the same bytes.

use std::fmt::Write as _;

use super::{Index, IndexedFile};

/// `simple/{project}/index.html`: the project's files, linked from two levels down.
pub fn render_project_page(project: &str, files: &[IndexedFile]) -> String {
    let title = format!("Links for {}", escape(project));
    let mut body = String::new();
    for file in files {
        write_file_link(&mut body, "../../", file);
    }
    page(&title, &body)
}

/// `simple/index.html`: one link per project.
pub fn render_root_page(index: &Index) -> String {
    let mut body = String::new();
    for project in index.projects.keys() {
        let _ = writeln!(body, "    <a href=\"{}/\">{}</a><br>", percent_encode(project), escape(project));
    }
    page("Simple index", &body)
}

/// `index.html` beside the files, for `pip install --find-links dist/index.html`: every
/// file of every project, sorted by project then file.
pub fn render_flat_page(index: &Index) -> String {
    let mut body = String::new();
    for file in index.projects.values().flatten() {
        write_file_link(&mut body, "", file);
    }
    page("Links for all projects", &body)
}

fn write_file_link(body: &mut String, up: &str, file: &IndexedFile) {
    let href = format!("{up}{}#sha256={}", percent_encode(&file.rel), file.sha256);
    let requires_python = match &file.requires_python {
        Some(spec) => format!(" data-requires-python=\"{}\"", escape(spec)),
        None => String::new(),
    };
    let _ = writeln!(body, "    <a href=\"{}\"{requires_python}>{}</a><br>", escape(&href), escape(&file.file_name));
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:repository-version\" content=\"1.0\">\n    \
         <title>{title}</title>\n  </head>\n  <body>\n    <h1>{title}</h1>\n{body}  </body>\n</html>\n"
    )
}

/// HTML text and attribute escaping.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes everything but unreserved characters and `/`, so a `+` of a local
/// version or a `#` in a directory name cannot change what the URL means.
pub(crate) fn percent_encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(rel: &str, requires_python: Option<&str>) -> IndexedFile {
        let file_name = rel.rsplit('/').next().unwrap_or(rel).to_owned();
        IndexedFile {
            rel: rel.to_owned(),
            file_name,
            name: "rocm".to_owned(),
            sha256: "ab".repeat(32),
            len: 1,
            requires_python: requires_python.map(str::to_owned),
        }
    }

    #[test]
    fn escapes_and_encodes() {
        assert_eq!(escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
        assert_eq!(
            percent_encode("gfx110X-all/rocm-1.0+local #1.tar.gz"),
            "gfx110X-all/rocm-1.0%2Blocal%20%231.tar.gz"
        );
    }

    #[test]
    fn project_page() {
        let page = render_project_page("rocm", &[file("gfx94X-dcgpu/rocm-7.1.0.tar.gz", Some(">=3.9"))]);
        let expected = format!(
            "    <a href=\"../../gfx94X-dcgpu/rocm-7.1.0.tar.gz#sha256={}\" data-requires-python=\"&gt;=3.9\">\
             rocm-7.1.0.tar.gz</a><br>\n",
            "ab".repeat(32)
        );
        assert!(page.contains(&expected), "{page}");
        assert!(page.starts_with("<!DOCTYPE html>\n"));
        assert!(page.contains("<title>Links for rocm</title>"));
    }

    #[test]
    fn hostile_names_stay_text() {
        let mut index = Index::default();
        index.projects.insert("x<script>".to_owned(), vec![file("x\"><script>.whl", None)]);
        let root = render_root_page(&index);
        assert!(root.contains("<a href=\"x%3Cscript%3E/\">x&lt;script&gt;</a>"), "{root}");
        let flat = render_flat_page(&index);
        assert!(!flat.contains("<script>"), "{flat}");
    }
}
