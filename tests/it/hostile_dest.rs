//! The destination is shared: taking the lock removes only temp files our
//! writers marked as theirs, never another tool's `.x.tmp-y`, a directory or a symlink,
//! and neither the lock file nor the identity cache is opened through a symlink.
//! `--no-build-packages` is all or nothing like the archives: a full disk leaves the
//! earlier trees as they were, and a SIGKILL while trees are swapped leaves every tree
//! whole, old or new.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Stdio};

use packager_tests::fixtures::names_but_the_lock;

use super::disk::Tmpfs;
use super::{full_text, Example};

const OURS: &str = ".tmp-archive-write-";

#[test]
fn taking_the_lock_removes_only_our_marked_temp_files() {
    let example = Example::new();
    let dest = example.dist();
    let outside = example.temp.path().join("precious.txt");
    fs_err::write(&outside, "not yours").expect("write");
    fs_err::create_dir_all(&dest).expect("mkdir");
    // Other tools' temp names, a directory and a link named like ours, and one stale file
    // of ours (what a killed run leaves).
    fs_err::write(dest.join(".upload.tmp-123"), "another tool's").expect("write");
    fs_err::create_dir_all(dest.join(".cache.tmp-dir/inner")).expect("mkdir");
    fs_err::create_dir_all(dest.join(format!(".x{OURS}unmarked/inner"))).expect("mkdir");
    symlink(&outside, dest.join(format!(".y{OURS}link"))).expect("symlink");
    let stale = dest.join(format!(".rocm-7.12.0.dev0.tar.gz{OURS}abc123"));
    fs_err::write(&stale, "half").expect("write");

    example.package().expect("packages");
    let left = names_but_the_lock(&dest);
    for kept in [".upload.tmp-123", ".cache.tmp-dir", &format!(".x{OURS}unmarked"), &format!(".y{OURS}link")] {
        assert!(left.iter().any(|name| name == kept), "{kept} was removed: {left:?}");
    }
    assert!(dest.join(".cache.tmp-dir/inner").is_dir());
    assert!(!stale.exists(), "our own stale temp file is removed");
    assert_eq!(fs_err::read_to_string(&outside).expect("read"), "not yours");
}

#[test]
fn the_lock_file_is_not_opened_through_a_symlink() {
    let example = Example::new();
    let dest = example.dist();
    fs_err::create_dir_all(&dest).expect("mkdir");
    // The lock lives in the destination's root, above the `dist/` archives go to.
    let lock = example.config().dest_dir.join(".rocm-packager.lock");
    // Dangling: following it would create the file it names.
    let target = example.temp.path().join("created-through-the-link");
    symlink(&target, &lock).expect("symlink");
    let error = example.package().expect_err("a symlinked lock is refused");
    let text = full_text(&error);
    assert!(text.contains(&lock.display().to_string()), "{text}");
    assert!(!target.exists(), "the link was followed: {text}");
    assert_eq!(names_but_the_lock(&dest), Vec::<String>::new(), "{text}");
}

/// The identity cache beside `dist/` is read like an old wheel (SPEC §8): a symlink
/// planted at its name is neither followed to read a cache nor written through; the run
/// says it could not save the cache, and its packages are complete.
#[test]
fn the_identity_cache_is_not_read_or_written_through_a_symlink() {
    let example = Example::new();
    let config = example.config();
    let cache = config.dest_dir.join(packager::identity_cache::IDENTITY_CACHE_NAME);
    fs_err::create_dir_all(&config.dest_dir).expect("mkdir");
    let outside = example.temp.path().join("not-a-cache.txt");
    fs_err::write(&outside, "not yours").expect("write");
    symlink(&outside, &cache).expect("symlink");
    let warnings = crate::support::Warnings::default();
    let report = packager::package(&config, &warnings).expect("packages");
    assert!(report.outputs.iter().all(|output| output.path.is_file()), "the packages are in place");
    let warned = warnings.take();
    let about_cache = warned.iter().find(|warning| warning.starts_with("cannot save the identity cache"));
    let warning = about_cache.unwrap_or_else(|| panic!("no warning about the cache: {warned:?}"));
    assert!(warning.contains(&cache.display().to_string()) && warning.contains("is a symlink"), "{warning}");
    assert!(cache.is_symlink(), "the link was replaced");
    assert_eq!(fs_err::read_to_string(&outside).expect("read"), "not yours");
}

/// Every tree in `dir` by name, each as its files (relative path → bytes) and symlinks.
fn trees(dir: &Path) -> BTreeMap<String, BTreeMap<String, Vec<u8>>> {
    let mut out = BTreeMap::new();
    for name in names_but_the_lock(dir) {
        let mut files = BTreeMap::new();
        walk(&dir.join(&name), "", &mut files);
        out.insert(name, files);
    }
    out
}

fn walk(dir: &Path, prefix: &str, files: &mut BTreeMap<String, Vec<u8>>) {
    let mut entries: Vec<_> = fs_err::read_dir(dir).expect("read").map(|entry| entry.expect("entry")).collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        let file_type = entry.file_type().expect("type");
        if file_type.is_symlink() {
            let target = fs_err::read_link(entry.path()).expect("readlink");
            files.insert(name, format!("-> {}", target.display()).into_bytes());
        } else if file_type.is_dir() {
            walk(&entry.path(), &format!("{name}/"), files);
        } else {
            files.insert(name, fs_err::read(entry.path()).expect("read"));
        }
    }
}

/// A devel-only header directory of `count` files: the devel trees grow, core does not.
fn add_devel_headers(example: &Example, count: usize, len: usize) {
    let dir = example.artifacts.join("prim_dev_generic/math-libs/rocPRIM/stage/include/rocprim/many");
    fs_err::create_dir_all(&dir).expect("mkdir");
    for index in 0..count {
        let mut text = format!("// header {index}\n").into_bytes();
        text.resize(len, b'x');
        fs_err::write(dir.join(format!("h{index}.hpp")), text).expect("write");
    }
}

#[test]
fn trees_on_a_full_disk_leave_the_earlier_trees_as_they_were() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: mounting a tmpfs needs root; the archive path's full-disk test runs everywhere");
        return;
    }
    let example = Example::new();
    let tmpfs = Tmpfs::mount(&example.temp.path().join("small"), "64m");
    let mut config = example.config();
    config.dest_dir = tmpfs.0.join("trees");
    config.output = packager::config::OutputMode::Trees;
    // Where the code lays trees out (`--dest-dir` itself today), not a path of our own.
    let out = config.output_dir();
    packager::package(&config, &packager::Silent).expect("the first run has room");
    let before = trees(&out);
    // Room for what is there, a new core tree and a little more: core is staged first (plan
    // order), then a devel tree, 8 MiB larger now, fails. Sizes are of the files; tmpfs
    // rounds each up to a page, so a quarter more is left for that.
    let size = |name_start: &str| -> usize {
        before
            .iter()
            .filter(|(name, _)| name.starts_with(name_start))
            .flat_map(|(_, files)| files.values())
            .map(Vec::len)
            .sum()
    };
    let room = (size("") + size("rocm_sdk_core-")) * 5 / 4 + (1 << 20);
    add_devel_headers(&example, 128, 64 << 10);
    tmpfs.resize(&format!("{}k", room >> 10));
    let error = packager::package(&config, &packager::Silent).expect_err("the disk is full");
    let text = full_text(&error);
    assert!(text.contains("No space left on device"), "{text}");
    assert!(before == trees(&out), "a tree changed or a temp tree was left: {text}");
    tmpfs.resize("128m");
    packager::package(&config, &packager::Silent).expect("a rerun with room succeeds");
    let after = names_but_the_lock(&out);
    assert_eq!(after, before.keys().cloned().collect::<Vec<_>>());
}

/// A tree is whole when its RECORD (wheels) or PKG-INFO (the sdist) is there and every
/// file RECORD lists exists.
fn assert_whole(tree: &Path) {
    let Some(record) = fs_err::read_dir(tree)
        .expect("read tree")
        .map(|entry| entry.expect("entry").path())
        .find(|path| path.extension().is_some_and(|ext| ext == "dist-info"))
    else {
        assert!(tree.join("PKG-INFO").is_file(), "{} has neither .dist-info nor PKG-INFO", tree.display());
        return;
    };
    let text = fs_err::read_to_string(record.join("RECORD")).expect("a tree's RECORD");
    for line in text.lines().filter(|line| !line.is_empty()) {
        let path = line.split(',').next().expect("a path");
        assert!(tree.join(path).exists(), "{} lacks {path}", tree.display());
    }
}

fn send(pid: u32, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(pid).expect("pid fits");
    // SAFETY: kill has no memory preconditions; the pid is our own live child.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

#[test]
fn sigkill_while_trees_are_swapped_leaves_every_tree_whole() {
    let example = Example::new();
    // Many files make the swap's removal of the older trees last long enough to catch.
    add_devel_headers(&example, 3000, 64);
    // The child's configuration, so the directory watched is the one the code writes to.
    let mut config = crate::support::package_config(&example.artifacts, &example.temp.path().join("trees"));
    config.output = packager::config::OutputMode::Trees;
    let trees_dir = config.output_dir();
    let child = || {
        Command::new(env!("CARGO_BIN_EXE_fault-child"))
            .arg("trees")
            .arg(example.temp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the child")
    };
    assert!(child().wait().expect("wait").success(), "the first run");
    let stems = names_but_the_lock(&trees_dir);
    // Each later run changes every devel tree, so the swap replaces them.
    let mut caught = false;
    for attempt in 0..20 {
        add_devel_headers(&example, 3000 + attempt, 64);
        let mut running = child();
        let aside = loop {
            if let Some(name) =
                names_but_the_lock(&trees_dir).into_iter().find(|name| name.contains(&format!(".old{OURS}")))
            {
                break Some(name);
            }
            if running.try_wait().expect("poll").is_some() {
                break None;
            }
            // A short sleep, not a spin: the machine's cores are the child's to write with.
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        if aside.is_none() {
            continue;
        }
        send(running.id(), libc::SIGSTOP);
        send(running.id(), libc::SIGKILL);
        let status = running.wait().expect("wait");
        if std::os::unix::process::ExitStatusExt::signal(&status) != Some(libc::SIGKILL) {
            continue;
        }
        caught = true;
        // Each tree is whole under its own name; one missing there is whole aside.
        for stem in &stems {
            let root = trees_dir.join(stem);
            if root.exists() {
                assert_whole(&root);
            } else {
                let aside = names_but_the_lock(&trees_dir)
                    .into_iter()
                    .find(|name| name.starts_with(&format!(".{stem}.old{OURS}")))
                    .unwrap_or_else(|| panic!("{stem} is gone: {:?}", names_but_the_lock(&trees_dir)));
                assert_whole(&trees_dir.join(aside));
            }
        }
        break;
    }
    assert!(caught, "no run was caught mid-swap in 20 attempts");
    assert!(child().wait().expect("wait").success(), "the rerun");
    assert_eq!(names_but_the_lock(&trees_dir), stems, "the rerun removes what the killed run left");
    for stem in &stems {
        assert_whole(&trees_dir.join(stem));
    }
}
