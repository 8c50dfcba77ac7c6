//! Settings every archive of a run shares: the time stamped on members and how members
//! and tarballs are compressed.
//!
//! Owns: these values. Does not own: where they come from (the caller reads
//! `SOURCE_DATE_EPOCH` and the command line).

/// Seconds since the Unix epoch stamped on every archive member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BuildTime(pub u64);

impl BuildTime {
    /// Used when `SOURCE_DATE_EPOCH` is not set: 2020-01-01T00:00:00Z, inside zip's range.
    pub const DEFAULT: BuildTime = BuildTime(1_577_836_800);
}

/// How wheel members are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum WheelCompression {
    Stored,
    /// Level 0-9 on zlib's scale, coded by libdeflate; the default (6) is smaller than
    /// zlib's level 6 (setuptools' and the reference's output). Members it cannot shrink by
    /// 1 % are stored (`chunk`).
    Deflate {
        level: u32,
    },
}

/// How the devel tree travels inside the devel wheel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum DevelTarballCompression {
    /// `_devel.tar`, deflated by the wheel like any member.
    None,
    /// `_devel.tar.xz`, xz preset 0-9, multi-threaded.
    Xz { preset: u32 },
}
