//! Debian's real fat ROCm libraries (rocRAND: one wrapper, 12 MB of device code; rocSPARSE:
//! 111 wrappers, 1.3 GB), downloaded once into the target dir, split by streaming, judged by
//! eu-elflint, and loaded by a program against a stub runtime with their HIP runtime's SONAME
//! and symbol version, which sees every wrapper register the marker.

use std::fs::File;
use std::path::PathBuf;
use std::process::Command;

use device_code::host::{self, FatState};

use crate::fat::{self, Shape};
use crate::support::{self, assert_no_new_complaints, reference, run, target_tmp};

const PAGE: u64 = 4096;

#[test]
fn real_rocm_libraries_from_debian_split_and_register() {
    let libraries = debian_fat_libraries();
    let work = tempfile::tempdir().expect("work dir");
    for (library, wrappers) in libraries {
        let name = library.file_name().expect("name").to_string_lossy().into_owned();
        let file = File::open(&library).expect("open");
        let binary = host::inspect(&file, &library).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!((binary.state(), binary.wrappers().len()), (FatState::Fat, wrappers), "{name}");
        let offsets: Vec<u64> =
            binary.wrappers().iter().map(|wrapper| wrapper.fatbin_offset.expect("inside")).collect();
        assert!(offsets.windows(2).all(|pair| pair[0] < pair[1]), "{name}: bundles in wrapper order");
        let fatbin = binary.fatbin().expect(".hip_fatbin").size;

        let output = work.path().join(&name);
        let read_before = bytes_read();
        let plan = support::transform(&library, &output, &reference(&format!("lib/{name}")));
        let read = bytes_read() - read_before;
        // Streaming: the transform reads what it keeps (and the headers), never the section.
        assert!(read < plan.output_len() + (64 << 20), "{name}: read {read} bytes to write {}", plan.output_len());
        let input_len = std::fs::metadata(&library).expect("stat").len();
        assert!(input_len - plan.output_len() + 3 * PAGE > fatbin, "{name}: {input_len} → {}", plan.output_len());
        assert_no_new_complaints(&library, &output);

        let stub = work.path().join(format!("{name}.runtime"));
        std::fs::create_dir(&stub).expect("mkdir");
        let runtime = fat::build_runtime(&stub, &fat::runtime_abi(&library));
        let (before, _) = fat::registrations(&fat::run_against_stub(&library, Shape::SharedObject, &runtime));
        assert_eq!(before.len(), wrappers, "{name}");
        assert!(before.iter().all(|registration| registration.magic == "HIPF"), "{name}: {before:?}");
        let (after, _) = fat::registrations(&fat::run_against_stub(&output, Shape::SharedObject, &runtime));
        assert_eq!(after.len(), wrappers, "{name}");
        let wanted = reference(&format!("lib/{name}"));
        for (index, registration) in after.iter().enumerate() {
            assert_eq!(
                (registration.magic.as_str(), registration.version, registration.index as usize),
                ("HIPK", 1, index)
            );
            assert_eq!(registration.details.len(), wanted.search_paths.len() + 1, "{name}: {registration:?}");
            assert_eq!(registration.details.last(), Some(&format!("kernel=lib/{name}")), "{name}");
        }
        eprintln!("{name}: {wrappers} wrappers, {input_len} → {} bytes, {read} bytes read", plan.output_len());
    }
}

/// Bytes this process has read so far (`rchar` of `/proc/self/io`).
fn bytes_read() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").expect("read /proc/self/io");
    io.lines().find_map(|line| line.strip_prefix("rchar: ")?.parse().ok()).expect("rchar")
}

/// rocRAND's and rocSPARSE's libraries with their wrapper counts, fetched with `apt-get
/// download` (after `apt-get update` when the lists are empty), unpacked with `dpkg-deb`
/// and kept across runs under the target dir.
fn debian_fat_libraries() -> Vec<(PathBuf, usize)> {
    let dir = target_tmp().join("debian-rocm-fat");
    let unpacked = dir.join("root");
    if !unpacked.join("usr/lib").exists() {
        std::fs::create_dir_all(&dir).expect("mkdir");
        let packages = ["librocrand1", "librocsparse0"];
        let download = || Command::new("apt-get").arg("download").args(packages).current_dir(&dir).output();
        let mut output = download().expect("apt-get (Debian package apt) fetches real ROCm libraries");
        if !output.status.success() {
            run(Command::new("apt-get").args(["update", "-qq"]), "apt");
            output = download().expect("apt-get download");
        }
        assert!(output.status.success(), "apt-get download {packages:?}: {}", String::from_utf8_lossy(&output.stderr));
        let partial = dir.join("root.partial");
        for entry in std::fs::read_dir(&dir).expect("list") {
            let deb = entry.expect("entry").path();
            if deb.extension().is_some_and(|extension| extension == "deb") {
                run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&partial), "dpkg");
            }
        }
        std::fs::rename(&partial, &unpacked).expect("rename the unpacked tree into place");
    }
    let lib = unpacked.join("usr/lib/x86_64-linux-gnu");
    vec![(lib.join("librocrand.so.1.1"), 1), (lib.join("librocsparse.so.0.1"), 111)]
}
