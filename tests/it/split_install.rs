//! The split wheels as users get them: what each holds, the metadata pip reads, pip and uv
//! installing the host with a device extra, and the runtime's view: every wrapper of the
//! installed library resolves, for the GPU the stub runtime is told it has, to an archive
//! holding exactly the code object clang's offload bundler extracts from the fat input.
//! The archives are read by a reader written here in Python from the format as documented
//! (rocm-kpack's KPAK header, the MessagePack table of contents, zstd frames), not by ours.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{fat_wheel, member_names, member_text, split_into, OFFLOAD_ARCHS, TAG};
use crate::support;

/// An independent reader of kpack archives: prints `key<TAB>arch<TAB>sha256` for every
/// code object, checking the header, the table of contents and each frame's size.
pub const KPACK_READER_PY: &str = r#"import hashlib, struct, sys
import msgpack, zstandard
def read(path):
    data = open(path, "rb").read()
    magic, version, toc_offset = struct.unpack_from("<4sIQ", data, 0)
    assert magic == b"KPAK" and version == 1, (magic, version)
    assert 16 <= toc_offset < len(data)
    toc = msgpack.unpackb(data[toc_offset:], raw=False)
    assert toc["format_version"] == 1
    arches = set(toc["gfx_arches"])
    scheme = toc.get("compression_scheme", "none")
    out = {}
    if scheme == "zstd-per-kernel":
        at = toc["zstd_offset"]
        count = struct.unpack_from("<I", data, at)[0]
        frames = []
        at += 4
        for _ in range(count):
            size = struct.unpack_from("<I", data, at)[0]
            frames.append(data[at + 4 : at + 4 + size])
            at += 4 + size
        assert at == toc["zstd_offset"] + toc["zstd_size"], (at, toc["zstd_offset"], toc["zstd_size"])
    for key, by_arch in toc["toc"].items():
        for arch, entry in by_arch.items():
            assert arch in arches, (arch, arches)
            assert entry["type"] == "hsaco"
            if scheme == "zstd-per-kernel":
                blob = zstandard.ZstdDecompressor().decompress(frames[entry["ordinal"]])
            else:
                blob = data[toc["blobs"][entry["ordinal"]]["offset"] :][: toc["blobs"][entry["ordinal"]]["size"]]
            assert len(blob) == entry["original_size"], (key, arch)
            out[(key, arch)] = blob
    return toc, out
if __name__ == "__main__":
    for path in sys.argv[1:]:
        toc, code = read(path)
        print(f"archive\t{path}\t{toc['group_name']}\t{','.join(toc['gfx_arches'])}")
        for (key, arch), blob in sorted(code.items()):
            print(f"code\t{key}\t{arch}\t{hashlib.sha256(blob).hexdigest()}")
"#;

/// Slices a `.hip_fatbin` dump at each bundle's magic (the bundler reads the first bundle
/// of its input only) and writes the slices as `bundle-<n>`.
const SLICE_BUNDLES_PY: &str = r#"import sys
data = open(sys.argv[1], "rb").read()
magic = b"__CLANG_OFFLOAD_BUNDLE__"
starts = []
at = data.find(magic)
while at >= 0:
    starts.append(at)
    at = data.find(magic, at + 1)
for n, start in enumerate(starts):
    end = starts[n + 1] if n + 1 < len(starts) else len(data)
    open(f"{sys.argv[2]}/bundle-{n}", "wb").write(data[start:end])
print(len(starts))
"#;

/// Every code object of the archives at `paths`, by (key, arch): its sha256, as the
/// independent reader reads it.
pub fn read_archives(paths: &[PathBuf]) -> BTreeMap<(String, String), String> {
    let mut command = Command::new(support::tools_venv().join("bin/python"));
    command.arg("-c").arg(KPACK_READER_PY).args(paths);
    let text = support::run(&mut command);
    text.lines()
        .filter_map(|line| line.strip_prefix("code\t"))
        .filter_map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            match fields.as_slice() {
                [key, arch, sha] => Some(((key.to_string(), arch.to_string()), sha.to_string())),
                _ => None,
            }
        })
        .collect()
}

/// What clang-offload-bundler extracts from the fat binary `binary`: the sha256 of the code
/// object of each (bundle index, target id).
pub fn bundler_code_objects(binary: &Path, work: &Path) -> BTreeMap<(usize, String), String> {
    bundler_code_objects_for(binary, work, OFFLOAD_ARCHS)
}

/// [`bundler_code_objects`] for the targets `archs`.
pub fn bundler_code_objects_for(binary: &Path, work: &Path, archs: &[&str]) -> BTreeMap<(usize, String), String> {
    fs_err::create_dir_all(work).expect("create the bundler's dir");
    let dump = work.join("hip_fatbin");
    support::run(
        support::tool("objcopy")
            .arg("--dump-section")
            .arg(format!(".hip_fatbin={}", dump.display()))
            .arg(binary)
            .arg(work.join("copy")),
    );
    let count: usize = support::run(Command::new("python3").arg("-c").arg(SLICE_BUNDLES_PY).arg(&dump).arg(work))
        .trim()
        .parse()
        .expect("a count");
    assert!(count >= 1, "no bundle in {}", binary.display());
    let mut found = BTreeMap::new();
    for bundle in 0..count {
        for arch in archs {
            let out = work.join(format!("{bundle}-{arch}.hsaco"));
            support::run(
                support::tool("clang-offload-bundler-15")
                    .args(["--type=o", "--unbundle"])
                    .arg(format!("--input={}", work.join(format!("bundle-{bundle}")).display()))
                    .arg(format!("--targets=hipv4-amdgcn-amd-amdhsa--{arch}"))
                    .arg(format!("--output={}", out.display())),
            );
            let bytes = fs_err::read(&out).expect("read the bundler's output");
            let sha: String =
                <sha2::Sha256 as sha2::Digest>::digest(&bytes).iter().map(|byte| format!("{byte:02x}")).collect();
            found.insert((bundle, arch.to_string()), sha);
        }
    }
    found
}

fn dist_of(dir: &Path, device_requires: &[&str]) -> PathBuf {
    let report = split_into(&[fat_wheel().wheel.clone()], dir, device_requires).expect("split the fat wheel");
    assert_eq!(report.wheels.len(), 1);
    dir.join("dist")
}

#[test]
fn a_fat_wheel_becomes_a_host_wheel_and_a_device_wheel_per_target() {
    let dir = tempfile::tempdir().expect("temp dir");
    let dist = dist_of(dir.path(), &["rocm-sdk-device-@GFXARCH@ == 7.10.0"]);
    let names = support::dist_names(&dist);
    let expected = [
        format!("hipext-1.0-{TAG}.whl"),
        format!("hipext_device_gfx1030-1.0-{TAG}.whl"),
        format!("hipext_device_gfx11xx-1.0-{TAG}.whl"),
        format!("hipext_device_gfx90a-1.0-{TAG}.whl"),
    ];
    assert_eq!(names, expected, "nothing else is left in dist/");
    let host = dist.join(&expected[0]);
    let host_members = member_names(&host);
    assert!(host_members.contains(&"hipext/lib/libhipext.so".to_owned()));
    assert!(host_members.contains(&"hipext/lib/rocblas/library/TensileManifest.txt".to_owned()));
    assert!(!host_members
        .iter()
        .any(|name| name.ends_with(".dat") || name.ends_with(".aks2") || name.contains(".kpack")));
    let metadata = member_text(&host, "hipext-1.0.dist-info/METADATA");
    for line in [
        "Name: hipext",
        "Provides-Extra: device-gfx90a",
        "Requires-Dist: hipext-device-gfx90a==1.0; extra == \"device-gfx90a\"",
        "Provides-Extra: device-gfx1100",
        "Requires-Dist: hipext-device-gfx11xx==1.0; extra == \"device-gfx1100\"",
        "Provides-Extra: device-all",
    ] {
        assert!(metadata.lines().any(|have| have == line), "{line:?} in\n{metadata}");
    }
    assert!(metadata.ends_with("\n\nThe description.\n"), "{metadata}");
    let device = dist.join(&expected[3]);
    let mut device_members = member_names(&device);
    device_members.sort();
    assert_eq!(
        device_members,
        [
            "hipext/.kpack/hipext_gfx90a:xnack+.kpack",
            "hipext/.kpack/hipext_gfx90a:xnack-.kpack",
            "hipext/lib/rocblas/library/TensileLibrary_gfx90a.dat",
            "hipext_device_gfx90a-1.0.dist-info/METADATA",
            "hipext_device_gfx90a-1.0.dist-info/RECORD",
            "hipext_device_gfx90a-1.0.dist-info/WHEEL",
            "hipext_device_gfx90a-1.0.dist-info/sboms/rocm-packager.cdx.json",
        ]
    );
    let device_metadata = member_text(&device, "hipext_device_gfx90a-1.0.dist-info/METADATA");
    assert!(
        device_metadata.contains("\nRequires-Dist: hipext==1.0\nRequires-Dist: rocm-sdk-device-gfx90a == 7.10.0\n"),
        "{device_metadata}"
    );
    let family_metadata = member_text(&dist.join(&expected[2]), "hipext_device_gfx11xx-1.0.dist-info/METADATA");
    assert!(!family_metadata.contains("rocm-sdk-device"), "{family_metadata}");
    let wheel_file = member_text(&device, "hipext_device_gfx90a-1.0.dist-info/WHEEL");
    assert!(wheel_file.contains(&format!("Tag: {TAG}\n")), "{wheel_file}");
    let family = dist.join(&expected[2]);
    assert!(member_names(&family).contains(&"hipext/lib/aotriton.images/amd-gfx11xx/attn_fwd.aks2".to_owned()));
    // The wheel tools users run accept every wheel: RECORD in the spec's form, names, tags.
    let tools = support::tools_venv().join("bin");
    for name in &expected {
        let wheel = dist.join(name);
        let unpacked = dir.path().join("unpacked");
        support::run(Command::new(tools.join("wheel")).arg("unpack").arg("--dest").arg(&unpacked).arg(&wheel));
        // A device wheel adds archives to its host's package directory and holds no module
        // of its own (W010), as the SDK's device wheels do.
        let ignore = if name.contains("_device_") { "--ignore=W002,W010" } else { "--ignore=W002" };
        support::run(Command::new(tools.join("check-wheel-contents")).arg(ignore).arg(&wheel));
        support::run(Command::new(tools.join("twine")).arg("check").arg("--strict").arg(&wheel));
    }
}

#[test]
fn every_wrapper_resolves_to_the_code_objects_the_bundler_extracts() {
    let fixture = fat_wheel();
    let dir = tempfile::tempdir().expect("temp dir");
    let dist = dist_of(dir.path(), &[]);
    let reference = bundler_code_objects(&fixture.library, &dir.path().join("bundler"));
    let executable_reference = bundler_code_objects(&fixture.executable, &dir.path().join("bundler-executable"));
    for (installer, extra, gfxarch) in [("pip", "device-gfx90a", "gfx90a:xnack+"), ("uv", "device-gfx1030", "gfx1030")]
    {
        let venv = support::fresh_venv(&dir.path().join(format!("venv-{installer}")));
        let requirement = format!("hipext[{extra}]");
        let output = match installer {
            "pip" => support::pip_install(&venv, &dist, &[requirement.as_str()], &[]),
            _ => Command::new(support::tools_venv().join("bin/uv"))
                .args(["pip", "install", "--no-index", "--no-cache", "--python"])
                .arg(venv.join("bin/python"))
                .arg("--find-links")
                .arg(&dist)
                .arg(&requirement)
                .output()
                .expect("run uv"),
        };
        support::assert_success(&output, &format!("{installer} install {requirement}"));
        let run = Command::new(venv.join("bin/python"))
            .args(["-c", "import hipext; print('run', hipext.run())"])
            .env("STUB_GFXARCH", gfxarch)
            .output()
            .expect("run python");
        support::assert_success(&run, "import hipext");
        let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
        assert!(
            stdout.contains("\nrun 0\n") || stdout.starts_with("run 0\n") || stdout.ends_with("run 0\n"),
            "{stdout}"
        );
        check_registrations(&stdout, "lib/libhipext.so", gfxarch, &reference);
        // The executable, run where it installs, finds the same archives from its own
        // directory.
        let site_packages = support::run(
            Command::new(venv.join("bin/python"))
                .args(["-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"]),
        );
        let probe = Command::new(Path::new(site_packages.trim()).join("hipext/bin/hipprobe"))
            .env("STUB_GFXARCH", gfxarch)
            .output()
            .expect("run hipprobe");
        support::assert_success(&probe, "hipprobe");
        let stdout = String::from_utf8_lossy(&probe.stdout).into_owned();
        check_registrations(&stdout, "bin/hipprobe", gfxarch, &executable_reference);
    }
}

/// The stub runtime's lines for `kernel_name`'s wrappers: each `HIPK`, version 1, its index,
/// its archive found, holding for `gfxarch` the code object the bundler extracted.
fn check_registrations(stdout: &str, kernel_name: &str, gfxarch: &str, reference: &BTreeMap<(usize, String), String>) {
    let wrappers: Vec<&str> = stdout.lines().filter(|line| line.starts_with("wrapper ")).collect();
    assert_eq!(wrappers.len(), 2, "{stdout}");
    let paths: Vec<PathBuf> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("path "))
        .map(|line| {
            assert!(line.ends_with(" exists=1"), "an archive is missing: {line}");
            PathBuf::from(line.trim_end_matches(" exists=1"))
        })
        .collect();
    assert_eq!(paths.len(), 2, "{stdout}");
    let code = read_archives(&paths[..1]);
    for (index, line) in wrappers.iter().enumerate() {
        let key = format!("{kernel_name}#{index}");
        assert!(line.starts_with(&format!("wrapper HIPK version=1 index={index} key={key}")), "{line}");
        let found =
            code.get(&(key.clone(), gfxarch.to_owned())).unwrap_or_else(|| panic!("{key} {gfxarch} in {code:?}"));
        assert_eq!(found, &reference[&(index, gfxarch.to_owned())], "{key} for {gfxarch}");
    }
}

#[test]
fn the_same_input_gives_the_same_bytes() {
    let first = tempfile::tempdir().expect("temp dir");
    let second = tempfile::tempdir().expect("temp dir");
    let (a, b) = (dist_of(first.path(), &[]), dist_of(second.path(), &[]));
    let names = support::dist_names(&a);
    assert_eq!(names, support::dist_names(&b));
    for name in &names {
        assert_eq!(fs_err::read(a.join(name)).expect("read"), fs_err::read(b.join(name)).expect("read"), "{name}");
    }
}

#[test]
fn the_gate_passes_the_split_set_and_finds_a_missing_archive() {
    let dir = tempfile::tempdir().expect("temp dir");
    let dist = dist_of(dir.path(), &[]);
    // Every wheel's bill of materials (the archives' code objects among its properties)
    // is one the CycloneDX project's own validator accepts.
    crate::sbom::assert_valid_sboms(&dist);
    let report = release_gate::verify_dist(&dist).expect("verify reads the dist");
    let violations: Vec<String> = report
        .packages
        .iter()
        .flat_map(|package| package.violations.iter().map(|finding| format!("{}: {}", finding.file, finding.message)))
        .collect();
    assert!(violations.is_empty(), "{violations:#?}");
    // Without the gfx1030 wheel's archive the set still offers gfx1030 (its database
    // file), and no archive holds the wrappers' code objects for it.
    let device = dist.join(format!("hipext_device_gfx1030-1.0-{TAG}.whl"));
    support::rewrite_wheel(&device, |members| members.retain(|(name, _, _)| !name.ends_with(".kpack")));
    let report = release_gate::verify_dist(&dist).expect("verify reads the dist");
    let found: Vec<String> = report
        .packages
        .iter()
        .flat_map(|package| package.violations.iter().map(|finding| finding.message.clone()))
        .collect();
    assert!(found.iter().any(|message| message.contains("gfx1030")), "{found:#?}");
}

#[test]
fn sramecc_code_objects_get_archives_of_their_own() {
    let dir = tempfile::tempdir().expect("temp dir");
    fs_err::write(dir.path().join("ecc.hip"), super::KERNEL_A).expect("write the kernel");
    let library = dir.path().join("libecc.so");
    let mut clang = support::tool("clang++-15");
    clang.current_dir(dir.path()).args(["-x", "hip", "-nogpulib", "-nogpuinc", "-fuse-ld=lld", "-fPIC", "-shared"]);
    clang.args(["--offload-arch=gfx90a:sramecc+:xnack-", "--offload-arch=gfx90a:sramecc-:xnack-"]);
    support::run(clang.args(["ecc.hip", "-Wl,--allow-shlib-undefined", "-o"]).arg(&library));
    let input = dir.path().join("in").join(fat_wheel().wheel.file_name().expect("a name"));
    fs_err::create_dir_all(dir.path().join("in")).expect("mkdir");
    fs_err::copy(&fat_wheel().wheel, &input).expect("copy");
    let bytes = fs_err::read(&library).expect("read the library");
    support::rewrite_wheel(&input, |members| members.push(("hipext/lib/libecc.so".into(), bytes, 0o755)));
    split_into(std::slice::from_ref(&input), &dir.path().join("out"), &[]).expect("split");
    let device = dir.path().join(format!("out/dist/hipext_device_gfx90a-1.0-{TAG}.whl"));
    let members = member_names(&device);
    for archive in ["hipext_gfx90a:sramecc+:xnack-.kpack", "hipext_gfx90a:sramecc-:xnack-.kpack"] {
        assert!(members.contains(&format!("hipext/.kpack/{archive}")), "{archive} in {members:?}");
    }
}
