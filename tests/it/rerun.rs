//! Packaging again into a destination that holds an earlier set (SPEC §8): members that
//! did not change are copied compressed from the old wheels, and whatever changed, or
//! however the old wheels were damaged, the archives are byte for byte those of a cold run
//! of the same input (`--no-reuse` into an empty directory).
//!
//! The archives are compared in the directory the report says they were written to, so
//! these tests do not depend on where `--dest-dir` puts them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use packager::config::{ArchiveSettings, OutputMode, Reuse, WheelCompression};
use packager::plan::PlannedFile;
use packager::{PackageConfig, Report};

use crate::hostile::{dist_snapshot, Example};

/// The directory the report's archives are in.
fn archive_dir(report: &Report) -> PathBuf {
    let first = report.outputs.first().expect("the run wrote archives");
    first.path.parent().expect("an archive has a directory").to_path_buf()
}

fn package(config: &PackageConfig) -> Report {
    packager::package(config, &packager::Silent).expect("the run succeeds")
}

/// A cold run of `example`'s current input with `config`'s settings, into a fresh directory.
fn cold_archives(example: &Example, config: &PackageConfig) -> BTreeMap<String, Vec<u8>> {
    let dest = example.temp.path().join(format!("cold-{}", std::process::id()));
    if dest.exists() {
        fs_err::remove_dir_all(&dest).expect("rm");
    }
    // The same settings, reuse off.
    let output = match config.output {
        OutputMode::Archives(settings) => OutputMode::Archives(ArchiveSettings { reuse: Reuse::Never, ..settings }),
        OutputMode::Trees => OutputMode::Trees,
    };
    let report = package(&PackageConfig { dest_dir: dest.clone(), output, ..config.clone() });
    assert_eq!(report.reuse.reused_bytes, 0, "a cold run has nothing to reuse");
    let archives = dist_snapshot(&archive_dir(&report));
    fs_err::remove_dir_all(&dest).expect("rm");
    archives
}

/// Reruns into `example`'s destination and checks the archives against a cold run.
fn rerun_matches_cold(example: &Example, config: &PackageConfig, what: &str) -> Report {
    let report = package(config);
    let archives = dist_snapshot(&archive_dir(&report));
    let cold = cold_archives(example, config);
    assert_eq!(archives.keys().collect::<Vec<_>>(), cold.keys().collect::<Vec<_>>(), "{what}");
    // The example's wheels and sdist: an empty destination would compare equal too.
    assert!(archives.len() >= 5, "{what}: {:?}", archives.keys());
    for (name, bytes) in &archives {
        assert!(bytes == &cold[name], "{what}: {name} differs from a cold run's");
    }
    let total = report.reuse.reused_bytes + report.reuse.compressed_bytes;
    let uncompressed: u64 = report.outputs.iter().map(|output| output.uncompressed_bytes).sum();
    assert_eq!(total, uncompressed, "{what}: every byte is either reused or compressed");
    report
}

/// The largest ELF library of the core package, which the RPATH edit changes too.
fn large_core_library(example: &Example) -> PathBuf {
    let lib = example.core_stage().join("lib");
    fs_err::read_dir(&lib)
        .expect("read lib")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| !path.is_symlink() && path.to_string_lossy().contains(".so"))
        .max_by_key(|path| fs_err::metadata(path).expect("stat").len())
        .expect("a library in core")
}

/// New bytes of the same size, and the old modification time put back: a change that
/// size and time stamps cannot see. One letter of the library's string is swapped.
fn rewrite_same_size_same_time(path: &Path) {
    let modified = fs_err::metadata(path).expect("stat").modified().expect("mtime");
    let mut bytes = fs_err::read(path).expect("read");
    let at = bytes.windows(8).position(|window| window == b"example:").expect("the library's string");
    bytes[at] = b'E';
    fs_err::write(path, &bytes).expect("write");
    let file = fs_err::File::options().write(true).open(path).expect("open");
    file.file().set_times(std::fs::FileTimes::new().set_modified(modified)).expect("set mtime");
    assert_eq!(fs_err::metadata(path).expect("stat").modified().expect("mtime"), modified);
}

#[test]
fn after_each_change_the_archives_are_those_of_a_cold_run() {
    let example = Example::new();
    let share = example.core_stage().join("share/rerun");
    fs_err::create_dir_all(&share).expect("mkdir");
    fs_err::write(share.join("removed.txt"), "removed between the runs\n").expect("write");
    let config = example.config();
    let first = package(&config);
    assert_eq!(first.reuse.reused_bytes, 0, "nothing to reuse in an empty destination");
    let before = dist_snapshot(&archive_dir(&first));
    let inodes = |report: &Report| -> Vec<u64> {
        use std::os::unix::fs::MetadataExt;
        let wheels = report.outputs.iter().filter(|output| output.file_name.ends_with(".whl"));
        wheels.map(|output| fs_err::metadata(&output.path).expect("stat").ino()).collect()
    };
    let first_inodes = inodes(&first);

    let unchanged = rerun_matches_cold(&example, &config, "nothing changed");
    assert!(dist_snapshot(&archive_dir(&unchanged)) == before, "an unchanged input gives the same archives");
    // Wheels that came out as they were are left in place, not rewritten.
    assert_eq!(inodes(&unchanged), first_inodes);
    // Only each wheel's bill of materials and RECORD, and the sdist, are compressed again.
    let wheels = unchanged.outputs.iter().filter(|output| output.file_name.ends_with(".whl")).count() as u64;
    let sdist_files = unchanged.outputs.iter().find(|output| output.file_name.ends_with(".tar.gz")).expect("sdist");
    assert_eq!(unchanged.reuse.compressed_members, 2 * wheels + sdist_files.files as u64, "{:?}", unchanged.reuse);

    let library = large_core_library(&example);
    let size = fs_err::metadata(&library).expect("stat").len();
    rewrite_same_size_same_time(&library);
    let rewritten = rerun_matches_cold(&example, &config, "a library rewritten with its size and time");
    let core =
        |report: &Report| report.outputs.iter().find(|output| output.package == "rocm-sdk-core").expect("core").reuse;
    assert!(core(&rewritten).compressed_bytes >= size, "{:?}", core(&rewritten));
    assert!(core(&rewritten).compressed_bytes < core(&rewritten).reused_bytes, "{:?}", core(&rewritten));
    assert_ne!(inodes(&rewritten), first_inodes, "the changed core wheel replaced the old one");
    let core_file = &core_output(&rewritten).file_name;
    assert!(dist_snapshot(&archive_dir(&rewritten))[core_file] != before[core_file], "the core wheel changed");

    fs_err::write(share.join("added.txt"), "added between the runs\n").expect("write");
    fs_err::remove_file(share.join("removed.txt")).expect("rm");
    let changed = rerun_matches_cold(&example, &config, "a file added and one removed");
    assert!(changed.reuse.reused_bytes > changed.reuse.compressed_bytes, "{:?}", changed.reuse);
}

/// A rerun whose files are as the last run read them reads none of them: the identity
/// cache beside `dist/` knows their bytes (SPEC §8). The runs claim to start a minute
/// after the example was written, so every file has settled; a file rewritten since is
/// read whatever that clock says, because its status-change time is new.
#[test]
fn a_rerun_reads_no_file_whose_identity_is_unchanged() {
    let example = Example::new();
    let config = PackageConfig {
        started: std::time::SystemTime::now() + std::time::Duration::from_secs(60),
        ..example.config()
    };
    let first = package(&config);
    let cache = config.dest_dir.join(packager::identity_cache::IDENTITY_CACHE_NAME);
    assert!(cache.is_file(), "the run saved its identity cache beside dist/");
    let in_dist: Vec<String> = fs_err::read_dir(archive_dir(&first))
        .expect("list")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with(".whl") && !name.ends_with(".tar.gz"))
        .collect();
    assert_eq!(in_dist, Vec::<String>::new(), "nothing but packages in dist/");

    let unchanged = rerun_matches_cold(&example, &config, "nothing changed, files known by identity");
    let core = core_output(&unchanged).reuse;
    assert!(core.unread_members > 0 && core.unread_bytes > 0, "{core:?}");
    // Every member the artifacts supply is copied unread, each devel tarball too (not
    // produced again); generated ones (Python, metadata, launchers) are bytes in memory,
    // hashed as before.
    let plan = packager::plan(&config, &packager::Silent).expect("plan");
    let files = plan.packages.iter().flat_map(|package| package.files.values());
    let from_artifacts = files.filter(|file| matches!(file, PlannedFile::Copy { .. } | PlannedFile::PatchRpath { .. }));
    let tarballs = plan.packages.iter().filter(|package| package.devel_tree.is_some()).count();
    assert_eq!(unchanged.reuse.unread_members, (from_artifacts.count() + tarballs) as u64, "{:?}", unchanged.reuse);

    let library = large_core_library(&example);
    let size = fs_err::metadata(&library).expect("stat").len();
    rewrite_same_size_same_time(&library);
    let rewritten = rerun_matches_cold(&example, &config, "a library rewritten with its size and time");
    let core = core_output(&rewritten).reuse;
    assert!(core.compressed_bytes >= size, "the library is read and compressed again: {core:?}");
    assert!(core.unread_members > 0, "the other files are still known: {core:?}");
}

fn core_output(report: &Report) -> &packager::assemble::OutputReport {
    report.outputs.iter().find(|output| output.package == "rocm-sdk-core").expect("core")
}

#[test]
fn another_compression_level_reuses_nothing() {
    let example = Example::new();
    package(&example.config());
    let config = PackageConfig {
        output: archives(WheelCompression::Deflate { level: 1 }, Reuse::FromPrevious),
        ..example.config()
    };
    let report = rerun_matches_cold(&example, &config, "level 1 after level 6");
    assert_eq!(report.reuse.reused_bytes, 0, "{:?}", report.reuse);
    let stored = PackageConfig { output: archives(WheelCompression::Stored, Reuse::FromPrevious), ..example.config() };
    let report = rerun_matches_cold(&example, &stored, "stored after level 1");
    assert_eq!(report.reuse.reused_bytes, 0, "{:?}", report.reuse);
}

#[test]
fn no_reuse_compresses_everything_into_the_same_bytes() {
    let example = Example::new();
    let first = package(&example.config());
    let before = dist_snapshot(&archive_dir(&first));
    let report = package(&PackageConfig {
        output: archives(WheelCompression::Deflate { level: 6 }, Reuse::Never),
        ..example.config()
    });
    assert_eq!(report.reuse.reused_bytes, 0);
    assert!(dist_snapshot(&archive_dir(&report)) == before);
}

/// Ways an old core wheel can be damaged or foreign. Each leaves the rerun's archives
/// those of a cold run, and no byte of the damaged member is copied.
#[test]
fn a_damaged_or_foreign_old_wheel_is_not_trusted() {
    type Damage = fn(&Path, &Path);
    let cases: [(&str, Damage); 5] = [
        ("truncated", |wheel, _| truncate(wheel)),
        ("a compressed byte flipped, headers kept", |wheel, _| flip_a_compressed_byte(wheel)),
        ("its end records gone", |wheel, _| {
            let len = fs_err::metadata(wheel).expect("stat").len();
            fs_err::File::options().write(true).open(wheel).expect("open").set_len(len - 22).expect("truncate");
        }),
        ("rewritten by Python's zipfile", |wheel, scratch| rewrite_with_python(wheel, scratch)),
        ("rewritten by the zip crate", |wheel, _| rewrite_with_zip_crate(wheel)),
    ];
    for (what, damage) in cases {
        let example = Example::new();
        let first = package(&example.config());
        let core = archive_dir(&first).join(&core_output(&first).file_name);
        damage(&core, example.temp.path());
        let report = rerun_matches_cold(&example, &example.config(), what);
        let core = core_output(&report).reuse;
        match what {
            "a compressed byte flipped, headers kept" => {
                assert!(core.reused_members > 0 && core.compressed_members > 1, "{what}: {core:?}")
            }
            _ => assert_eq!(core.reused_bytes, 0, "{what}: {core:?}"),
        }
        // The other wheels were not damaged and are reused.
        assert!(report.reuse.reused_bytes > core.reused_bytes, "{what}: {:?}", report.reuse);
    }
}

fn truncate(wheel: &Path) {
    let len = fs_err::metadata(wheel).expect("stat").len();
    fs_err::File::options().write(true).open(wheel).expect("open").set_len(len / 2).expect("truncate");
}

/// Flips one byte in the middle of the largest member's compressed data; every header,
/// the CRC and RECORD still describe the original.
fn flip_a_compressed_byte(wheel: &Path) {
    let mut archive = zip::ZipArchive::new(fs_err::File::open(wheel).expect("open")).expect("a zip");
    let (start, len) = (0..archive.len())
        .map(|index| {
            let member = archive.by_index_raw(index).expect("member");
            (member.data_start().expect("data start"), member.compressed_size())
        })
        .max_by_key(|&(_, len)| len)
        .expect("members");
    drop(archive);
    let mut bytes = fs_err::read(wheel).expect("read");
    let at = usize::try_from(start + len / 2).expect("fits");
    bytes[at] ^= 0x55;
    fs_err::write(wheel, bytes).expect("write");
}

/// The same members, names and RECORD, written by Python's zipfile (deflated, level 6).
fn rewrite_with_python(wheel: &Path, scratch: &Path) {
    let copy = scratch.join("python-copy.whl");
    let script = "import sys, zipfile\n\
                  src = zipfile.ZipFile(sys.argv[1])\n\
                  with zipfile.ZipFile(sys.argv[2], 'w', zipfile.ZIP_DEFLATED, compresslevel=6) as out:\n\
                  \x20   for info in src.infolist():\n\
                  \x20       out.writestr(info.filename, src.read(info.filename))\n";
    crate::support::run(std::process::Command::new("python3").args(["-c", script]).arg(wheel).arg(&copy));
    fs_err::rename(&copy, wheel).expect("rename");
}

/// The same members, names and RECORD, written by the `zip` crate.
fn rewrite_with_zip_crate(wheel: &Path) {
    use std::io::{Read, Write};
    let mut archive = zip::ZipArchive::new(fs_err::File::open(wheel).expect("open")).expect("a zip");
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for index in 0..archive.len() {
        let mut member = archive.by_index(index).expect("member");
        let mut bytes = Vec::new();
        member.read_to_end(&mut bytes).expect("read");
        out.start_file(member.name().expect("UTF-8 name").into_owned(), options).expect("start");
        out.write_all(&bytes).expect("write");
    }
    drop(archive);
    let bytes = out.finish().expect("finish").into_inner();
    fs_err::write(wheel, bytes).expect("write");
}

/// Archives with `wheel_compression` and `reuse`, the rest as the CLI's defaults.
fn archives(wheel_compression: WheelCompression, reuse: Reuse) -> OutputMode {
    OutputMode::Archives(ArchiveSettings { wheel_compression, reuse, ..crate::support::archive_settings() })
}
