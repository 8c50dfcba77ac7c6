//! The identity cache's tests: a rerun whose sources are as an earlier run read them reads
//! none of them and writes a cold write's bytes; a source written since, or too recently
//! to tell, is read; a damaged, foreign, lying or oversized cache file is not trusted.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::*;
use crate::{
    write_wheel, ArchiveOptions, BuildTime, Member, MemberSource, Reuse, Silent, WheelCompression, WrittenFile,
};

/// A file copied as it is, counting how often it is opened.
#[derive(Debug)]
struct CountedFile {
    path: PathBuf,
    opens: Arc<AtomicUsize>,
}

impl MemberSource for CountedFile {
    fn len(&self) -> u64 {
        std::fs::metadata(&self.path).map(|metadata| metadata.len()).unwrap_or(0)
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn open(&self) -> Result<Box<dyn Read + Send + '_>, WriteError> {
        self.opens.fetch_add(1, Ordering::SeqCst);
        let file =
            std::fs::File::open(&self.path).map_err(|source| WriteError::Read { path: self.path.clone(), source })?;
        Ok(Box::new(file))
    }

    fn identity(&self) -> Option<SourceIdentity> {
        SourceIdentity::of_file(&self.path, b"")
    }
}

/// Text and noise, so the member deflates and spans chunks.
fn payload(seed: u8, len: usize) -> Vec<u8> {
    let mut state = u64::from(seed) + 1;
    (0..len)
        .map(|i| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            if i % 4096 < 3000 {
                b"hipModuleLaunchKernel "[i % 22]
            } else {
                (state >> 56) as u8
            }
        })
        .collect()
}

/// A source directory with one library, a destination for wheels and one for the cache.
struct Setup {
    temp: tempfile::TempDir,
    library: PathBuf,
    opens: Arc<AtomicUsize>,
}

impl Setup {
    fn new() -> Setup {
        let temp = tempfile::tempdir().expect("tempdir");
        let library = temp.path().join("libdemo.so");
        std::fs::write(&library, payload(1, 3 << 20)).expect("write");
        for dir in ["dist", "cold"] {
            std::fs::create_dir(temp.path().join(dir)).expect("mkdir");
        }
        Setup { temp, library, opens: Arc::default() }
    }

    fn spec(&self) -> crate::WheelSpec {
        let source = CountedFile { path: self.library.clone(), opens: Arc::clone(&self.opens) };
        let members = vec![
            Member {
                name: "demo/__init__.py".into(),
                data: MemberData::Bytes(Arc::new(b"x = 1\n".to_vec())),
                executable: false,
            },
            Member { name: "demo/libdemo.so".into(), data: MemberData::Source(Arc::new(source)), executable: true },
        ];
        crate::demo_wheel_spec(members)
    }

    /// Writes the wheel into `dist/` with the cache saved in the temp dir, as a run that
    /// started at `started` would; returns what was written and how often the library was
    /// opened. The wheel's bytes must be a cold write's.
    fn run(&self, started: SystemTime) -> (WrittenFile, usize) {
        let cache_dir = self.temp.path();
        let (cache, _) = IdentityCache::load(&cache_dir.join(NAME), started, 64);
        let before = self.opens.load(Ordering::SeqCst);
        let written = write(&self.temp.path().join("dist"), &self.spec(), Reuse::FromPrevious, Some(&cache));
        let opened = self.opens.load(Ordering::SeqCst) - before;
        cache.save(cache_dir, NAME, false).expect("save");
        let cold = write(&self.temp.path().join("cold"), &self.spec(), Reuse::Never, None);
        let bytes = |file: &WrittenFile| std::fs::read(&file.path).expect("read");
        assert!(bytes(&written) == bytes(&cold), "a rerun differs from a cold write");
        assert_eq!(written.sha256, cold.sha256, "the reported digest is the file's");
        (written, opened)
    }
}

const NAME: &str = ".identities";

fn write(dir: &Path, spec: &crate::WheelSpec, reuse: Reuse, identities: Option<&IdentityCache>) -> WrittenFile {
    let options = ArchiveOptions {
        compression: WheelCompression::Deflate { level: 6 },
        build_time: BuildTime::DEFAULT,
        reuse,
        identities,
    };
    write_wheel(dir, spec, &options, &Silent).expect("writes")
}

/// A run started this long after the files were written: they have settled.
fn later() -> SystemTime {
    SystemTime::now() + Duration::from_secs(60)
}

#[test]
fn a_settled_source_is_not_read_again_and_the_wheel_is_a_cold_writes() {
    let setup = Setup::new();
    let (first, opened) = setup.run(later());
    assert_eq!((first.reuse.reused_members, opened), (0, 1), "a cold run reads its source");
    // The cache knows the library's bytes by its identity, and the wheel's sums by name:
    // the rerun takes its sha256 from there (the digest is checked against a cold
    // write's by `run`).
    let (saved, _) = IdentityCache::load(&setup.temp.path().join(NAME), later(), 64);
    assert_eq!((saved.loaded.sources.len(), saved.loaded.outputs.len()), (1, 1), "{saved:?}");
    assert_eq!(saved.loaded.outputs[&first.file_name].sha256.to_vec(), decode_hex(&first.sha256));
    let (second, opened) = setup.run(later());
    assert_eq!(opened, 0, "the library is known by its identity: {:?}", second.reuse);
    assert_eq!((second.reuse.unread_members, second.reuse.unread_bytes), (1, 3 << 20), "{:?}", second.reuse);
}

#[test]
fn a_source_that_changed_too_recently_to_tell_is_read() {
    let setup = Setup::new();
    setup.run(later());
    // The run starts within a tick of the file system's clock after the library's last
    // change: a write after the run looked at it could still have the same ctime.
    let changed = std::os::unix::fs::MetadataExt::ctime(&std::fs::metadata(&setup.library).expect("stat"));
    let changed = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(changed).expect("after 1970"));
    let (racy, opened) = setup.run(changed + Duration::from_millis(50));
    assert_eq!((opened, racy.reuse.unread_members), (1, 0), "{:?}", racy.reuse);
    // Read, found unchanged and copied, as everything else but RECORD.
    assert_eq!(racy.reuse.reused_members, 4, "{:?}", racy.reuse);
}

#[test]
fn a_library_rewritten_with_its_size_and_time_is_read_and_coded() {
    let setup = Setup::new();
    setup.run(later());
    let modified = std::fs::metadata(&setup.library).expect("stat").modified().expect("mtime");
    std::fs::write(&setup.library, payload(2, 3 << 20)).expect("rewrite");
    let file = std::fs::File::options().write(true).open(&setup.library).expect("open");
    file.set_times(std::fs::FileTimes::new().set_modified(modified)).expect("set mtime");
    // Even a clock that calls the rewrite settled: its status-change time is new.
    let (rewritten, opened) = setup.run(later());
    assert_eq!(rewritten.reuse.unread_members, 0, "{:?}", rewritten.reuse);
    assert!(opened >= 1 && rewritten.reuse.compressed_bytes >= 3 << 20, "{:?}", rewritten.reuse);
}

/// Rewrites the saved cache's source entries with `change` and a valid closing digest.
fn forge(cache_file: &Path, change: impl Fn(&mut FileSums)) {
    let (mut known, _) = file::read(cache_file, 64).expect("read").expect("a cache");
    assert!(!known.sources.is_empty());
    known.sources.values_mut().for_each(change);
    std::fs::write(cache_file, file::render(&known)).expect("write");
}

fn decode_hex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|at| u8::from_str_radix(&text[at..at + 2], 16).expect("hex")).collect()
}

#[test]
fn a_cache_whose_digest_is_not_the_old_members_makes_it_read_and_coded() {
    let setup = Setup::new();
    setup.run(later());
    forge(&setup.temp.path().join(NAME), |known| known.sha256[0] ^= 1);
    let (lied_to, _) = setup.run(later());
    assert_eq!(lied_to.reuse.unread_members, 0, "{:?}", lied_to.reuse);
    assert_eq!(lied_to.reuse.reused_members, 3, "all but the library and RECORD: {:?}", lied_to.reuse);
}

#[test]
fn a_damaged_foreign_or_oversized_cache_is_not_read() {
    let setup = Setup::new();
    setup.run(later());
    let path = setup.temp.path().join(NAME);
    let saved = std::fs::read(&path).expect("read");
    let load = |max_entries| IdentityCache::load(&path, later(), max_entries).1;
    assert_eq!(load(64), None);
    let untrusted = |reason: &str| Some(Ignored::Untrusted(reason.to_owned()));
    let damaged = untrusted("it is damaged (its lines or closing digest do not check out)");
    let mut flipped = saved.clone();
    flipped[file::HEADER.len() + 10] ^= 1;
    for (what, bytes, expected) in [
        ("a byte flipped", flipped, damaged.clone()),
        ("truncated", saved[..saved.len() - 10].to_vec(), damaged.clone()),
        ("another format", [b"other ".as_slice(), &saved].concat(), damaged),
    ] {
        std::fs::write(&path, bytes).expect("write");
        assert_eq!(load(64), expected, "{what}");
    }
    let (_, opened) = setup.run(later());
    assert_eq!(opened, 1, "a run with a damaged cache reads its source");
    match load(0) {
        Some(Ignored::TooLarge(reason)) => assert!(reason.contains("more than the 128 this run can use"), "{reason}"),
        other => panic!("an oversized cache: {other:?}"),
    }
    std::fs::remove_file(&path).expect("rm");
    std::os::unix::fs::symlink(&setup.library, &path).expect("symlink");
    assert_eq!(load(64), untrusted("it is a symlink, not a regular file"));
}

/// A wheel whose one member is a tarball of the library and a generated file.
fn tarball_spec(setup: &Setup) -> crate::WheelSpec {
    let source = CountedFile { path: setup.library.clone(), opens: Arc::clone(&setup.opens) };
    let file = |data, executable| crate::TarEntryKind::File { data, executable };
    let entries = vec![
        crate::TarEntry { name: "tree".into(), kind: crate::TarEntryKind::Dir },
        crate::TarEntry { name: "tree/libdemo.so".into(), kind: file(MemberData::Source(Arc::new(source)), true) },
        crate::TarEntry {
            name: "tree/note.txt".into(),
            kind: file(MemberData::Bytes(Arc::new(b"made\n".to_vec())), false),
        },
        crate::TarEntry {
            name: "tree/link".into(),
            kind: crate::TarEntryKind::Symlink { target: "libdemo.so".into() },
        },
    ];
    let tarball = crate::TarballSpec {
        entries,
        streamed: None,
        compression: crate::TarballCompression::None,
        build_time: BuildTime::DEFAULT,
    };
    let member =
        Member { name: "demo/tree.tar".into(), data: MemberData::Tarball(Arc::new(tarball)), executable: false };
    crate::demo_wheel_spec(vec![member])
}

#[test]
fn a_tarball_of_settled_sources_is_not_produced_again() {
    let setup = Setup::new();
    let (cache_dir, dist) = (setup.temp.path().to_path_buf(), setup.temp.path().join("dist"));
    let run = |started: SystemTime| -> (WrittenFile, usize) {
        let (cache, _) = IdentityCache::load(&cache_dir.join(NAME), started, 64);
        let before = setup.opens.load(Ordering::SeqCst);
        let written = write(&dist, &tarball_spec(&setup), Reuse::FromPrevious, Some(&cache));
        let opened = setup.opens.load(Ordering::SeqCst) - before;
        cache.save(&cache_dir, NAME, false).expect("save");
        let cold = write(&setup.temp.path().join("cold"), &tarball_spec(&setup), Reuse::Never, None);
        assert!(std::fs::read(&written.path).expect("read") == std::fs::read(&cold.path).expect("read"));
        (written, opened)
    };
    assert_eq!(run(later()).1, 1, "a cold run produces the tarball");
    let (second, opened) = run(later());
    assert_eq!((opened, second.reuse.unread_members), (0, 1), "{:?}", second.reuse);
    // A file of the tarball changed: its identity with it; the tarball is produced again.
    std::fs::write(&setup.library, payload(4, 3 << 20)).expect("rewrite");
    let (third, opened) = run(later());
    assert_eq!(third.reuse.unread_members, 0, "{:?}", third.reuse);
    assert!(opened >= 1 && third.reuse.compressed_bytes > 3 << 20, "{:?}", third.reuse);
}
