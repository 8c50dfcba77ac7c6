//! Files that cannot be packaged as they are: names that are not UTF-8, special files,
//! unreadable paths, and files that change between the plan and the write stage (removed,
//! resized, replaced, or rewritten in place with the same size, before or while they stream).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use packager::plan::PlannedFile;

use super::{dist_snapshot, fails_leaving_dist_intact, full_text, Example};

fn mkfifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL");
    // SAFETY: a valid NUL-terminated path; mkfifo touches no memory of ours.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn non_utf8_names_are_refused_naming_the_bytes() {
    // A file, a directory, and a symlink's target, each with an invalid byte.
    let cases: [(&[u8], &str); 3] =
        [(b"lib/lib\xffbad.so", "file"), (b"share/\xfe\xfedir", "dir"), (b"lib/link", "link")];
    for (name, kind) in cases {
        let example = Example::new();
        let stage = example.core_stage();
        let path = stage.join(OsStr::from_bytes(name));
        let error = fails_leaving_dist_intact(&example, |_| match kind {
            "file" => fs_err::write(&path, "x").expect("write"),
            "dir" => fs_err::create_dir_all(path.join("inner")).expect("mkdir"),
            _ => symlink(OsStr::from_bytes(b"lib\x80target.so"), &path).expect("symlink"),
        });
        let text = full_text(&error);
        let shown = match kind {
            "file" => format!("{}/lib/lib\\xffbad.so", stage.display()),
            "dir" => format!("{}/share/\\xfe\\xfedir", stage.display()),
            _ => "lib\\x80target.so".to_owned(),
        };
        assert!(text.contains(&shown), "{kind}: {text}");
        assert!(text.contains("UTF-8") && text.contains("hint: "), "{kind}: {text}");
    }
}

#[test]
fn special_files_are_refused_naming_them() {
    let example = Example::new();
    let fifo = example.core_stage().join("lib/libfifo.so.1");
    let error = fails_leaving_dist_intact(&example, |_| mkfifo(&fifo));
    let text = full_text(&error);
    assert!(text.contains(&fifo.display().to_string()) && text.contains("FIFO"), "{text}");
    assert!(text.contains("hint: "), "{text}");

    let example = Example::new();
    let socket_path = example.core_stage().join("share/hostile.sock");
    let error = fails_leaving_dist_intact(&example, |_| {
        fs_err::create_dir_all(socket_path.parent().expect("parent")).expect("mkdir");
        let listener = std::os::unix::net::UnixListener::bind(&socket_path).expect("bind");
        drop(listener);
    });
    let text = full_text(&error);
    assert!(text.contains(&socket_path.display().to_string()) && text.contains("socket"), "{text}");
}

#[test]
fn unreadable_paths_are_named() {
    // As root, permission bits do not stop reads; a file that cannot be opened for
    // reading without blocking (a FIFO) and a dangling entry stand in for it there.
    let example = Example::new();
    let library = example.core_stage().join("lib/libhsa-runtime64.so.1.15.0");
    let error = fails_leaving_dist_intact(&example, |_| {
        if is_root() {
            fs_err::remove_file(&library).expect("rm");
            mkfifo(&library);
        } else {
            fs_err::set_permissions(&library, std::fs::Permissions::from_mode(0o000)).expect("chmod");
        }
    });
    let text = full_text(&error);
    assert!(text.contains(&library.display().to_string()), "{text}");

    if !is_root() {
        let example = Example::new();
        let dir = example.core_stage().join("lib");
        let error = fails_leaving_dist_intact(&example, |_| {
            fs_err::set_permissions(&dir, std::fs::Permissions::from_mode(0o000)).expect("chmod");
        });
        fs_err::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod back");
        let text = full_text(&error);
        assert!(text.contains(&dir.display().to_string()) && text.contains("ermission denied"), "{text}");
    }
}

/// A core file the plan copies as it is, and one it patches (RPATH), with their paths.
fn planned_sources(plan: &packager::Plan) -> (PathBuf, PathBuf) {
    let core = plan.packages.iter().find(|package| package.names.distribution == "rocm-sdk-core").expect("core");
    let copied = core
        .files
        .iter()
        .find_map(|(rel, file)| match file {
            PlannedFile::Copy { source, .. } if rel.as_str() == "share/hostile/data.txt" => Some(source.to_path_buf()),
            _ => None,
        })
        .expect("the added data file is copied");
    let patched = core
        .files
        .values()
        .find_map(|file| match file {
            PlannedFile::PatchRpath { source, edit, .. }
                if edit.strategy != elf_rpath::EditStrategy::Unchanged
                    && source.ends_with("lib/libhsa-runtime64.so.1.15.0") =>
            {
                Some(source.to_path_buf())
            }
            _ => None,
        })
        .expect("the runtime library gets an RPATH edit");
    (copied, patched)
}

/// Alters a planned file (its path, and a scratch dir outside the artifacts).
type Change = dyn Fn(&Path, &Path);

/// Plans, lets `change` alter `path`, then runs the write stage alone into an empty dist.
/// Returns the error text; asserts nothing but the lock was left in dist.
fn write_after_change(change: &Change, which: usize) -> String {
    let example = Example::new();
    let data_dir = example.core_stage().join("share/hostile");
    fs_err::create_dir_all(&data_dir).expect("mkdir");
    fs_err::write(data_dir.join("data.txt"), "planned contents\n".repeat(1000)).expect("write");
    let config = example.config();
    let plan = packager::plan(&config, &packager::Silent).expect("plans");
    let (copied, patched) = planned_sources(&plan);
    let path = if which == 0 { copied } else { patched };
    change(&path, example.temp.path());
    let lock = packager::DestLock::acquire(&config.destination()).expect("lock");
    let error = packager::write_locked(&plan, &config, &packager::Silent, &lock)
        .expect_err("a file changed after planning must fail the write");
    let left = dist_snapshot(&example.dist());
    assert!(left.is_empty(), "left in dist after {error}: {:?}", left.keys());
    let text = full_text(&error);
    assert!(text.contains(&path.display().to_string()), "the error names {}: {text}", path.display());
    text
}

#[test]
fn files_that_change_after_planning_fail_the_write_cleanly() {
    let outside_same_size = |path: &Path, temp: &Path| {
        let len = fs_err::metadata(path).expect("stat").len();
        let outside = temp.join("outside.bin");
        fs_err::write(&outside, vec![b'S'; len as usize]).expect("write");
        fs_err::remove_file(path).expect("rm");
        symlink(&outside, path).expect("symlink");
    };
    let changes: [(&str, &Change); 6] = [
        ("vanished", &|path, _| fs_err::remove_file(path).expect("rm")),
        ("grew", &|path, _| {
            let mut bytes = fs_err::read(path).expect("read");
            bytes.extend_from_slice(b"more");
            fs_err::write(path, bytes).expect("write");
        }),
        ("shrank", &|path, _| {
            let bytes = fs_err::read(path).expect("read");
            fs_err::write(path, &bytes[..bytes.len() / 2]).expect("write");
        }),
        ("same-size link to outside", &outside_same_size),
        ("dangling link", &|path, _| {
            fs_err::remove_file(path).expect("rm");
            symlink("nowhere", path).expect("symlink");
        }),
        ("FIFO", &|path, _| {
            fs_err::remove_file(path).expect("rm");
            mkfifo(path);
        }),
    ];
    for (what, change) in changes {
        for which in [0, 1] {
            let text = write_after_change(change, which);
            assert!(text.contains("changed while it was being packaged"), "{what}: {text}");
            assert!(text.contains("hint: "), "{what}: {text}");
        }
    }
}

/// Rewrites `path` in place: the same length and inode, other bytes, and a modification
/// time a minute later than before (set, so a coarse file-system clock cannot hide it).
fn rewrite_same_size(path: &Path) {
    let before = fs_err::metadata(path).expect("stat");
    let bytes: Vec<u8> = fs_err::read(path).expect("read").iter().map(|byte| byte ^ 0x5a).collect();
    let mut file = fs_err::OpenOptions::new().write(true).open(path).expect("open for writing");
    std::io::Write::write_all(&mut file, &bytes).expect("rewrite");
    let later = before.modified().expect("mtime") + std::time::Duration::from_secs(60);
    file.file().set_modified(later).expect("set mtime");
    let after = fs_err::metadata(path).expect("stat");
    assert_eq!((after.len(), after.ino()), (before.len(), before.ino()), "rewritten in place");
}

#[test]
fn a_same_size_rewrite_after_planning_fails_the_write_and_leaves_dist_as_it_was() {
    for which in ["copied", "patched"] {
        let example = Example::new();
        let data_dir = example.core_stage().join("share/hostile");
        fs_err::create_dir_all(&data_dir).expect("mkdir");
        fs_err::write(data_dir.join("data.txt"), "planned contents\n".repeat(1000)).expect("write");
        example.package().expect("the example packages");
        let before = dist_snapshot(&example.dist());
        assert!(before.keys().any(|name| name.ends_with(".whl")), "{:?}", before.keys());

        let config = example.config();
        let plan = packager::plan(&config, &packager::Silent).expect("plans");
        let (copied, patched) = planned_sources(&plan);
        let path = if which == "copied" { copied } else { patched };
        rewrite_same_size(&path);
        let lock = packager::DestLock::acquire(&config.destination()).expect("lock");
        let error = packager::write_locked(&plan, &config, &packager::Silent, &lock)
            .expect_err("a file rewritten after planning must fail the write");
        let text = full_text(&error);
        let named = format!("{} changed while it was being packaged", path.display());
        assert!(text.contains(&named) && text.contains("it was modified"), "{which}: {text}");
        assert!(text.contains("hint: "), "{which}: {text}");
        assert!(dist_snapshot(&example.dist()) == before, "{which}: dist changed although the run failed");
    }
}

/// Passes bytes on, and rewrites `path` in place once the file has begun to stream.
struct RewriteMidway<'a> {
    path: &'a Path,
    written: usize,
    rewritten: bool,
}

impl std::io::Write for RewriteMidway<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.written += bytes.len();
        // Past the 512-byte tar header: part of the file has been read.
        if self.written > 4096 && !self.rewritten {
            self.rewritten = true;
            rewrite_same_size(self.path);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_rewrite_while_a_file_streams_fails_once_it_has_been_read() {
    use archive_write::{write_tarball, TarEntry, TarEntryKind, TarballSpec, WriteError};
    let temp = tempfile::tempdir().expect("tempdir");
    let path = temp.path().join("big.bin");
    fs_err::write(&path, vec![7u8; 4 << 20]).expect("write");
    let metadata = fs_err::metadata(&path).expect("stat");
    let stamp = Some(packager::input::catalog::FileStamp::of(&metadata));
    let spec = TarballSpec {
        entries: vec![TarEntry {
            name: "_devel/big.bin".into(),
            kind: TarEntryKind::File {
                data: packager::output::payload::file(std::sync::Arc::from(path.as_path()), metadata.len(), stamp),
                executable: false,
            },
        }],
        streamed: None,
        compression: packager::config::DevelTarballCompression::None,
        build_time: packager::config::BuildTime::DEFAULT,
    };
    let mut out = RewriteMidway { path: &path, written: 0, rewritten: false };
    let error = write_tarball(&mut out, &spec, std::path::Path::new("_devel.tar"))
        .expect_err("a file rewritten while it streams must fail");
    assert!(out.rewritten, "the file was rewritten midway");
    let WriteError::Changed { path: named, reason } = &error else { panic!("{error:?}") };
    assert_eq!(named, &path);
    assert!(reason.contains("it was modified") && reason.contains("while it was read"), "{reason}");
}
