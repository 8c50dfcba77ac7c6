//! How deep a `win_amd64` wheel installs (SPEC §7, MAX_PATH): each installed path (wheel
//! members and the devel tarball's, which expand into site-packages) under a stated
//! site-packages prefix, measured in UTF-16 units as Windows measures it. Without long
//! paths enabled (a registry setting and an application manifest), Windows cannot create a
//! path of 260 units or more (MAX_PATH counts the terminating NUL): pip then fails, or
//! leaves files out. A directory must leave room for an 8.3 file name in it: Windows
//! without long paths cannot create one of 248 units or more (MAX_PATH − 12, Microsoft's
//! "Maximum Path Length Limitation"), so every member's directory is measured against
//! that as its path is against MAX_PATH. A set that says it requires long paths (`verify
//! --dist --windows-long-paths`) only has the depth reported.
//!
//! Owns: that measure and its finding. Does not own: Windows names (`member_check`).

use super::archive::Archive;
use super::report::{Check, Findings};

/// The site-packages of a per-user python.org Python 3.13 for a user with a 16-character
/// name: the common install, with room for a long user name.
pub const DEFAULT_WINDOWS_PREFIX: &str =
    r"C:\Users\abcdefghijklmnop\AppData\Local\Programs\Python\Python313\Lib\site-packages\";

/// MAX_PATH, counting the terminating NUL: the longest path is one unit shorter.
pub const MAX_PATH: usize = 260;

/// The longest directory Windows without long paths creates is one unit shorter than this:
/// MAX_PATH less room for a `\` and an 8.3 file name.
pub const MAX_DIRECTORY: usize = MAX_PATH - 12;

/// Where a Windows set is judged to install, and whether it requires long paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowsPaths {
    /// The site-packages directory, ending in `\`.
    pub prefix: String,
    /// The set says its users enable long paths: depth is reported, never a violation.
    pub long_paths: bool,
}

impl Default for WindowsPaths {
    fn default() -> WindowsPaths {
        WindowsPaths { prefix: DEFAULT_WINDOWS_PREFIX.to_owned(), long_paths: false }
    }
}

/// The deepest installed path of a Windows wheel under the prefix, and its length in UTF-16
/// units; a violation when it reaches MAX_PATH, or else when its deepest directory reaches
/// [`MAX_DIRECTORY`], and the set does not require long paths. `None` for other wheels.
pub(crate) fn check_windows_paths(
    archive: &Archive,
    options: &WindowsPaths,
    findings: &mut Findings,
) -> Option<(String, usize)> {
    let wheel_name = archive.wheel_name.as_ref()?;
    if !wheel_name.platform.split('.').any(|platform| platform.starts_with("win")) {
        return None;
    }
    let devel = archive.devel.iter().flat_map(|tree| tree.entries.iter().map(|entry| entry.path.as_str()));
    let installed = archive.installed.iter().map(String::as_str).chain(devel);
    let (member, length) = installed
        .map(|member| {
            let path = format!("{}{}", options.prefix, member.trim_end_matches('/').replace('/', "\\"));
            (member, path.encode_utf16().count())
        })
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))?;
    let deepest = format!("{}{}", options.prefix, member.trim_end_matches('/').replace('/', "\\"));
    if options.long_paths {
        return Some((deepest, length));
    }
    if length >= MAX_PATH {
        findings.violation(
            &archive.file,
            Some(member),
            Check::WindowsName,
            format!(
                "installs as `{}`, {length} characters: Windows without long paths cannot create a path of \
                 {MAX_PATH} or more (MAX_PATH); shorten it, or pass --windows-long-paths if the set requires long \
                 paths",
                crate::escape::escape(&deepest)
            ),
        );
        // Its directory is too deep as well, most likely: one finding says what to shorten.
        return Some((deepest, length));
    }
    let devel = archive.devel.iter().flat_map(|tree| tree.entries.iter().map(|entry| entry.path.as_str()));
    let installed = archive.installed.iter().map(String::as_str).chain(devel);
    let directory = installed
        .filter_map(|member| member.trim_end_matches('/').rsplit_once('/').map(|(dir, _)| (member, dir)))
        .map(|(member, dir)| {
            let path = format!("{}{}", options.prefix, dir.replace('/', "\\"));
            let length = path.encode_utf16().count();
            (member, path, length)
        })
        .max_by(|a, b| a.2.cmp(&b.2).then(b.0.cmp(a.0)));
    if let Some((member, path, length)) = directory.filter(|(_, _, length)| *length >= MAX_DIRECTORY) {
        findings.violation(
            &archive.file,
            Some(member),
            Check::WindowsName,
            format!(
                "its directory installs as `{}`, {length} characters: Windows without long paths cannot create a \
                 directory of {MAX_DIRECTORY} or more (MAX_PATH − 12, room for an 8.3 file name in it); shorten it, \
                 or pass --windows-long-paths if the set requires long paths",
                crate::escape::escape(&path)
            ),
        );
    }
    Some((deepest, length))
}
