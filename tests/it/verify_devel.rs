//! `verify --dist` on a broken devel tarball: members climbing out, symlinks that resolve
//! nowhere or leave site-packages, ELF files inside an xz tarball.

use std::io::Write;

use super::*;

#[test]
fn devel_member_climbing_out() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let devel_tar = tar_bytes(&[("_rocm_sdk_devel/", TarMember::Dir), DEVEL_INIT, ("../x", TarMember::File(b"x"))]);
    let devel = position(&wheels, DEVEL_WHEEL);
    wheels[devel] = devel_wheel("_devel.tar", devel_tar);
    let report = verify(&fixture, &wheels);
    assert_eq!(violations(&report), [(DEVEL_WHEEL.to_owned(), Some("../x".to_owned()), Check::MemberPath)]);
}

#[test]
fn devel_symlink_to_nothing() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let link = "_rocm_sdk_devel/lib/libgone.so";
    let devel_tar = tar_bytes(&[
        ("./_rocm_sdk_devel/", TarMember::Dir),
        DEVEL_INIT,
        (link, TarMember::Symlink("../../_rocm_sdk_core/lib/libgone.so")),
    ]);
    let devel = position(&wheels, DEVEL_WHEEL);
    wheels[devel] = devel_wheel("_devel.tar", devel_tar);
    let report = verify(&fixture, &wheels);
    assert_eq!(violations(&report), [(DEVEL_WHEEL.to_owned(), Some(link.to_owned()), Check::Devel)]);
}

#[test]
fn xz_devel_tarball_elf_files_are_checked() {
    let fixture = fixture();
    let runpath_dir = fixture.build.join("runpath");
    fs_err::create_dir_all(&runpath_dir).expect("create dir");
    let with_runpath = build_libraries(&runpath_dir, &[BLAS_RPATH, "-Wl,--enable-new-dtags"]);
    let devel_lib = "_rocm_sdk_devel/lib/libblas.so";
    let tar = tar_bytes(&[
        ("_rocm_sdk_devel/", TarMember::Dir),
        DEVEL_INIT,
        (devel_lib, TarMember::File(&with_runpath.blas)),
    ]);
    let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 1);
    xz.write_all(&tar).expect("compress");
    let devel_tar_xz = xz.finish().expect("finish xz");
    let mut wheels = default_wheels(&fixture);
    let devel = position(&wheels, DEVEL_WHEEL);
    wheels[devel] = devel_wheel("_devel.tar.xz", devel_tar_xz);
    let report = verify(&fixture, &wheels);
    assert_eq!(violations(&report), [(DEVEL_WHEEL.to_owned(), Some(devel_lib.to_owned()), Check::Rpath)]);
    let devel = report.packages.iter().find(|package| package.file == DEVEL_WHEEL).expect("devel");
    assert_eq!(devel.n_elf_files, 1);
}

#[test]
fn devel_symlink_leaving_site_packages() {
    let fixture = fixture();
    let mut wheels = default_wheels(&fixture);
    let link = "_rocm_sdk_devel/lib/libc.so";
    // Three levels up from `_rocm_sdk_devel/lib/` is above site-packages: the link would
    // pick up whatever the host has there.
    let target = "../../../lib/libc.so.6";
    let devel_tar = tar_bytes(&[("_rocm_sdk_devel/", TarMember::Dir), DEVEL_INIT, (link, TarMember::Symlink(target))]);
    let devel = position(&wheels, DEVEL_WHEEL);
    wheels[devel] = devel_wheel("_devel.tar", devel_tar);
    let report = verify(&fixture, &wheels);
    assert_violations(
        &report,
        &[(DEVEL_WHEEL, Some(link), Check::Devel, "symlink to `../../../lib/libc.so.6` leaves site-packages")],
    );
}

/// A SONAME of `..` or `.` once became such a link: it resolves, to a directory
/// holding the link, so anything walking the installed tree loops. An empty target too.
#[test]
fn devel_symlink_looping_to_its_own_directory_or_empty() {
    for target in ["..", ".", "", "../lib"] {
        let fixture = fixture();
        let mut wheels = default_wheels(&fixture);
        let link = "_rocm_sdk_devel/lib/libloop.so";
        let devel_tar = tar_bytes(&[
            ("_rocm_sdk_devel/", TarMember::Dir),
            DEVEL_INIT,
            ("_rocm_sdk_devel/lib/", TarMember::Dir),
            (link, TarMember::Symlink(target)),
        ]);
        let devel = position(&wheels, DEVEL_WHEEL);
        wheels[devel] = devel_wheel("_devel.tar", devel_tar);
        let report = verify(&fixture, &wheels);
        assert_eq!(
            violations(&report),
            [(DEVEL_WHEEL.to_owned(), Some(link.to_owned()), Check::Devel)],
            "{target:?}: {report:?}"
        );
    }
}
