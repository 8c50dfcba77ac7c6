//! Wheel specs for the archive writer's tests: its default options, a package's metadata,
//! members from bytes or from a file.

use std::path::Path;
use std::sync::Arc;

use packager::config::{BuildTime, WheelCompression};
use packager::write::{
    ArchiveOptions, CoreMetadata, DistName, Member, MemberData, PlatformTag, Version, WheelFileName,
};

/// The version of every test wheel.
const VERSION: &str = "1.2.0.dev0";

pub fn options() -> ArchiveOptions<'static> {
    ArchiveOptions {
        compression: WheelCompression::Deflate { level: 6 },
        build_time: BuildTime::DEFAULT,
        reuse: packager::config::Reuse::FromPrevious,
        identities: None,
    }
}

pub fn metadata(name: &str) -> CoreMetadata {
    CoreMetadata {
        name: name.into(),
        version: VERSION.into(),
        summary: "A test package".into(),
        requires_dist: Vec::new(),
        requires_python: Some(">=3.8".into()),
        license: Some("MIT".into()),
        provides_extra: Vec::new(),
        description: Some("# Demo\n\nBuilt by the packager's tests.\n".into()),
    }
}

/// The file name of the test wheel of `name` ([`metadata`]'s version), for `linux_x86_64`.
pub fn file_name(name: &str) -> WheelFileName {
    let (name, version) = (DistName::new(name).expect("a valid name"), Version::parse(VERSION).expect("a version"));
    WheelFileName::new(name, version, PlatformTag::new("linux_x86_64").expect("a tag"), None).expect("a file name")
}

pub fn bytes(name: &str, text: &str) -> Member {
    Member { name: name.into(), data: MemberData::Bytes(Arc::new(text.as_bytes().to_vec())), executable: false }
}

pub fn file(name: &str, path: &Path, executable: bool) -> Member {
    let len = fs_err::metadata(path).expect("stat fixture").len();
    Member { name: name.into(), data: packager::member::file(Arc::from(path), len, None), executable }
}
