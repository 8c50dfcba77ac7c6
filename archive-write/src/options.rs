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

/// The tool that writes the archives, as a wheel's `WHEEL` file names it (`Generator:
/// {name} {version}`). Its name is also part of every codec fingerprint, so coded bytes are
/// only ever copied between wheels of one generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Generator {
    pub name: &'static str,
    pub version: &'static str,
}

/// Whether a wheel written where an earlier one of its name lies copies the coded bytes of
/// the members that did not change (SPEC §8). The output is the same bytes either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reuse {
    /// Copy what did not change from the wheel already at the output's path.
    FromPrevious,
    /// Code every member anew (for a destination whose wheels are not trusted).
    Never,
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

/// How a tarball member of a wheel is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum TarballCompression {
    /// A plain `.tar`, deflated by the wheel like any member.
    None,
    /// `.tar.xz`, xz preset 0-9, multi-threaded; the wheel stores it as it is.
    Xz { preset: u32 },
}
