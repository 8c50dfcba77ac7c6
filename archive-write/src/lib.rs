//! Archive writers for Python packages: wheels (zip with parallel chunked deflate and
//! ZIP64, RECORD), sdists (tar.gz), tarballs carried inside a wheel (tar or tar.xz), and
//! atomic placement: a run stages each output under a hidden temp name, then [`commit`]s
//! them all at once (`atomic`).
//!
//! Owns: archive formats, reproducibility (order, times, modes), parallel compression and
//! hashing, atomic rename, and reuse: a wheel written where an earlier run left one of the
//! same name copies the coded bytes of every member that did not change (`previous`,
//! `reuse`, SPEC §8); and a wheel written anew from an existing one (`existing`): its
//! members read and checked, the unchanged ones copied as coded bytes. Must not know: the product that uses it, its flags or its inputs'
//! names, ELF, or what goes in a package; members arrive as bytes or as [`MemberSource`]s
//! that the caller opens and checks, and its errors' hints speak of files and directories
//! only (a caller words them in its own terms).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub mod atomic;
mod chunk;
mod codec;
mod deflate;
mod error;
mod existing;
mod final_block;
mod identity;
mod input;
mod member;
mod metadata;
mod names;
mod options;
mod output_hash;
mod pipe;
mod previous;
mod progress;
mod record;
mod reuse;
mod sdist;
mod source_identity;
mod tar;
mod tree;
mod tree_commit;
mod wheel;
mod zip;

pub use error::{WriteAction, WriteError};
pub use existing::{CodedCopy, ExistingMember, ExistingWheel};
pub use identity::IdentityCache;
pub use input::{kind_of, open_regular, Links};
pub use member::{from_io, to_io, MemberSource};
pub use names::{
    check_variant_label, file_name_form, fold_separators, normalize, DistName, NameError, PlatformTag, Version,
    WheelFileName,
};
pub use options::{BuildTime, Generator, Reuse, TarballCompression, WheelCompression};
pub use previous::Ignored;
pub use progress::{Progress, Silent};
pub use reuse::ReuseCounts;
pub use source_identity::SourceIdentity;
pub use tar::xz_stream;
pub use tree_commit::{commit_trees, StagedTree};
pub use wheel::{RewriteContent, RewriteMember, RewriteSpec};

/// Where a member's bytes come from.
#[derive(Clone, Debug)]
pub enum MemberData {
    /// Bytes the caller's source yields when opened (a payload file, an edited file).
    Source(Arc<dyn MemberSource>),
    /// Generated content (Python, metadata, launchers).
    Bytes(Arc<Vec<u8>>),
    /// A tarball (`.tar` or `.tar.xz`) produced while the wheel is written, so it never
    /// exists on disk.
    Tarball(Arc<TarballSpec>),
}

/// One file in a wheel.
#[derive(Clone, Debug)]
pub struct Member {
    /// '/'-separated path inside the archive.
    pub name: String,
    pub data: MemberData,
    /// Stored as 0o755 (else 0o644).
    pub executable: bool,
}

/// Core metadata (METADATA / PKG-INFO), version 2.1 or newer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreMetadata {
    pub name: String,
    pub version: String,
    pub summary: String,
    pub requires_dist: Vec<String>,
    pub requires_python: Option<String>,
    pub license: Option<String>,
    pub provides_extra: Vec<String>,
    pub description: Option<String>,
}

/// The entry point group of console scripts.
pub const CONSOLE_SCRIPTS: &str = "console_scripts";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryPoint {
    /// The group: [`CONSOLE_SCRIPTS`], or another (a plugin group such as `variant_plugins`).
    pub group: String,
    /// The entry point's name, e.g. the console script `pip`.
    pub name: String,
    /// `module:function`.
    pub target: String,
}

#[derive(Clone, Debug)]
pub struct WheelSpec {
    /// The wheel's file name: its distribution and version (which `metadata` names too),
    /// its platform tag and, for a variant wheel, its label. The writer spells nothing of
    /// it itself.
    pub file_name: WheelFileName,
    pub metadata: CoreMetadata,
    /// Named in the `WHEEL` file, and part of every member's codec fingerprint.
    pub generator: Generator,
    /// Where the wheel's root installs (`Root-Is-Purelib`).
    pub root: WheelRoot,
    /// A variant wheel's `.dist-info/variant.json` (PEP 825, draft), whose content the
    /// caller renders: present exactly when the file name carries a label.
    pub variant_json: Option<Vec<u8>>,
    pub entry_points: Vec<EntryPoint>,
    /// Any order; the writer sorts by name (dist-info last).
    pub members: Vec<Member>,
    /// A `.dist-info` member made from the digests of all the others, written after them;
    /// `None` for a wheel without one.
    pub inventory: Option<Inventory>,
}

/// A `.dist-info` member rendered from the name, SHA-256 and size of every other member
/// (a bill of materials): it can only be made once the payload has streamed through the
/// writer, edits and all, so it is written after every other member and before RECORD,
/// which lists it like any member. The digests are those RECORD gets, so rendering it
/// costs no second read of the payload, and members copied from an earlier wheel keep
/// theirs (SPEC §8).
#[derive(Clone, Debug)]
pub struct Inventory {
    /// Its path inside the `.dist-info` directory (`sboms/tool.cdx.json`).
    pub path: String,
    pub render: Arc<dyn RenderInventory>,
}

/// One member of a wheel as an [`Inventory`] sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListedMember<'a> {
    /// '/'-separated path inside the archive.
    pub name: &'a str,
    pub sha256: [u8; 32],
    pub size: u64,
}

/// Renders an [`Inventory`]'s bytes.
pub trait RenderInventory: Send + Sync + std::fmt::Debug {
    /// `file_name` is the wheel's (a tree's too: the wheel it lays out); `members` are
    /// every member but RECORD and the inventory itself, in archive order, with the
    /// digests RECORD gives them (a tree has no tarball member: its entries are files).
    fn render(&self, file_name: &str, members: &[ListedMember<'_>]) -> Vec<u8>;
}

/// Which of site-packages' two roots a wheel's root is (PEP 427 `Root-Is-Purelib`); one
/// directory in a venv, two on some system installs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WheelRoot {
    /// Platform-specific files: `Root-Is-Purelib: false`.
    Platlib,
    /// Pure Python (`py3-none-any`): `Root-Is-Purelib: true`.
    Purelib,
}

#[derive(Clone, Debug)]
pub struct SdistFile {
    /// Path inside `{name}-{version}/`.
    pub name: String,
    pub bytes: Vec<u8>,
    pub executable: bool,
}

#[derive(Clone, Debug)]
pub struct SdistSpec {
    pub metadata: CoreMetadata,
    /// Everything but PKG-INFO (which the writer renders from `metadata`).
    pub files: Vec<SdistFile>,
}

#[derive(Clone, Debug)]
pub enum TarEntryKind {
    Dir,
    File { data: MemberData, executable: bool },
    Symlink { target: String },
}

#[derive(Clone, Debug)]
pub struct TarEntry {
    /// '/'-separated path inside the tarball.
    pub name: String,
    pub kind: TarEntryKind,
}

/// Entries of a tarball made while it is written, in name order. A tarball may hold an
/// entry per path of a large tree; made one at a time, their names and sources are never a
/// list in memory (SPEC §5).
pub trait TarEntrySource: Send + Sync + std::fmt::Debug {
    /// Calls `each` with every entry, in strictly increasing name order; stops at its
    /// first error and returns it.
    fn for_each_entry(&self, each: &mut dyn FnMut(TarEntry) -> Result<(), WriteError>) -> Result<(), WriteError>;

    /// What the entries add up to, known before they are made (progress, size bounds).
    fn totals(&self) -> TarTotals;
}

/// Sums over a [`TarEntrySource`]'s entries.
#[derive(Clone, Copy, Debug, Default)]
pub struct TarTotals {
    pub entries: u64,
    /// Bytes of the entry names and link targets.
    pub name_bytes: u64,
    /// Bytes of the regular files.
    pub file_bytes: u64,
}

impl TarTotals {
    /// The totals of `entries`, added to these.
    pub fn with(mut self, entries: &[TarEntry]) -> TarTotals {
        for entry in entries {
            self.entries += 1;
            self.name_bytes += entry.name.len() as u64;
            match &entry.kind {
                TarEntryKind::File { data, .. } => {
                    let len = member::known_len(data).unwrap_or(u64::MAX / 4);
                    self.file_bytes = self.file_bytes.saturating_add(len);
                }
                TarEntryKind::Symlink { target } => self.name_bytes += target.len() as u64,
                TarEntryKind::Dir => {}
            }
        }
        self
    }
}

#[derive(Clone, Debug)]
pub struct TarballSpec {
    /// Any order; the writer sorts by name.
    pub entries: Vec<TarEntry>,
    /// More entries, made while writing and merged with `entries` by name.
    pub streamed: Option<Arc<dyn TarEntrySource>>,
    pub compression: TarballCompression,
    pub build_time: BuildTime,
}

#[derive(Clone, Copy, Debug)]
pub struct ArchiveOptions<'a> {
    pub compression: WheelCompression,
    pub build_time: BuildTime,
    /// Copy unchanged members' coded bytes from a wheel of the same name already in the
    /// destination, instead of coding them again (SPEC §8).
    pub reuse: Reuse,
    /// With [`Reuse::FromPrevious`]: what earlier runs knew of the member bytes of source
    /// files by their identity, so a file that has not changed is not read again; what
    /// this run reads is remembered there too. `None`: every new byte is read and hashed.
    pub identities: Option<&'a IdentityCache>,
}

/// A finished output file, for the summary table.
#[derive(Clone, Debug, serde::Serialize)]
pub struct WrittenFile {
    pub path: PathBuf,
    pub file_name: String,
    pub n_members: usize,
    pub uncompressed_bytes: u64,
    pub compressed_bytes: u64,
    pub sha256: String,
    /// Member bytes copied in coded form from the previous wheel, and bytes coded anew.
    pub reuse: ReuseCounts,
}

/// An output complete and synced under a hidden temp name in its destination, not yet
/// under its own: [`commit`] renames a run's outputs into place together, and one
/// dropped uncommitted is removed, so a failed run changes nothing in `dist/`.
pub struct StagedFile {
    /// What the file will be; `path` is its final place.
    pub written: WrittenFile,
    staged: atomic::Staged,
}

/// Writes the wheel `spec.file_name` names into a temp file in `dest_dir`.
///
/// Members are compressed on rayon's global pool in bounded chunks, so one call already
/// uses every core; call it from outside the pool (it works from inside, by running pool
/// jobs while it waits, but then several wheels' windows are in memory at once).
pub fn stage_wheel(
    dest_dir: &Path,
    spec: &WheelSpec,
    options: &ArchiveOptions,
    progress: &dyn Progress,
) -> Result<StagedFile, WriteError> {
    wheel::stage_wheel(dest_dir, spec, options, progress)
}

/// Writes a wheel anew from an existing one ([`RewriteSpec`]) into a temp file in
/// `dest_dir`, for [`commit`]: the caller's name and `.dist-info`, RECORD from the new
/// members' hashes, unchanged members copied as coded bytes.
pub fn stage_rewritten_wheel(
    dest_dir: &Path,
    spec: RewriteSpec,
    options: &ArchiveOptions,
    progress: &dyn Progress,
) -> Result<StagedFile, WriteError> {
    wheel::stage_rewritten_wheel(dest_dir, spec, options, progress)
}

/// Writes `{name}-{version}.tar.gz` into a temp file in `dest_dir`.
pub fn stage_sdist(dest_dir: &Path, spec: &SdistSpec, options: &ArchiveOptions) -> Result<StagedFile, WriteError> {
    sdist::stage_sdist(dest_dir, spec, options)
}

/// Stages `bytes` as `dest_dir/file_name`, a plain file published beside the archives (an
/// index file that describes some of them), for [`commit`] with them.
pub fn stage_file(dest_dir: &Path, file_name: &str, bytes: &[u8]) -> Result<StagedFile, WriteError> {
    use io::Write as _;
    let mut atomic = atomic::AtomicFile::create(dest_dir, file_name)?;
    let dest = atomic.dest().to_path_buf();
    atomic.file().write_all(bytes).map_err(|source| WriteError::io(WriteAction::Write, &dest, source))?;
    let staged = atomic.stage()?;
    let written = WrittenFile {
        path: staged.dest().to_path_buf(),
        file_name: file_name.to_owned(),
        n_members: 0,
        uncompressed_bytes: staged.len,
        compressed_bytes: staged.len,
        sha256: staged.sha256.clone(),
        reuse: ReuseCounts::default(),
    };
    Ok(StagedFile { written, staged })
}

/// Renames every staged file into place, all or none (a failure puts back what the names
/// held before), and syncs the directory once. Whoever commits into a destination must
/// hold its lock (the caller's), as a packaging run's whole write stage does.
pub fn commit(files: Vec<StagedFile>) -> Result<Vec<WrittenFile>, WriteError> {
    let (written, staged): (Vec<WrittenFile>, Vec<atomic::Staged>) =
        files.into_iter().map(|file| (file.written, file.staged)).unzip();
    atomic::commit(staged)?;
    Ok(written)
}

/// Writes the wheel `spec.file_name` names into `dest_dir` atomically: a wheel
/// on its own, outside a packaging run (see [`stage_wheel`]).
pub fn write_wheel(
    dest_dir: &Path,
    spec: &WheelSpec,
    options: &ArchiveOptions,
    progress: &dyn Progress,
) -> Result<WrittenFile, WriteError> {
    let staged = stage_wheel(dest_dir, spec, options, progress)?;
    Ok(commit(vec![staged])?.pop().expect("one file staged, one committed"))
}

/// Writes `{name}-{version}.tar.gz` into `dest_dir` atomically, outside a packaging run.
pub fn write_sdist(dest_dir: &Path, spec: &SdistSpec, options: &ArchiveOptions) -> Result<WrittenFile, WriteError> {
    let staged = stage_sdist(dest_dir, spec, options)?;
    Ok(commit(vec![staged])?.pop().expect("one file staged, one committed"))
}

/// Lays a wheel's members out as a directory tree (and a tarball member's entries as real
/// directories, symlinks and files) under `dest_dir/{dist name}-{version}`, under a temp
/// name until [`commit_trees`].
pub fn stage_tree(dest_dir: &Path, spec: &WheelSpec) -> Result<StagedTree, WriteError> {
    tree::stage_tree(dest_dir, spec)
}

/// An sdist's files laid out as the directory its archive holds, `dest_dir/{name}-{version}`,
/// under a temp name until [`commit_trees`].
pub fn stage_sdist_tree(dest_dir: &Path, spec: &SdistSpec) -> Result<StagedTree, WriteError> {
    tree::stage_sdist_tree(dest_dir, spec)
}

/// [`stage_tree`] and [`commit_trees`] of one tree, outside a packaging run.
pub fn write_tree(dest_dir: &Path, spec: &WheelSpec) -> Result<PathBuf, WriteError> {
    let staged = stage_tree(dest_dir, spec)?;
    Ok(commit_trees(vec![staged])?.pop().expect("one tree staged, one committed"))
}

/// [`stage_sdist_tree`] and [`commit_trees`] of one tree, outside a packaging run.
pub fn write_sdist_tree(dest_dir: &Path, spec: &SdistSpec) -> Result<PathBuf, WriteError> {
    let staged = stage_sdist_tree(dest_dir, spec)?;
    Ok(commit_trees(vec![staged])?.pop().expect("one tree staged, one committed"))
}

/// Writes a tarball alone (what a [`MemberData::Tarball`] member carries), for tools and
/// tests that want to look at it; `name` names it in errors.
pub fn write_tarball(out: &mut dyn io::Write, spec: &TarballSpec, name: &Path) -> Result<(), WriteError> {
    tar::write_tarball(spec, out, &Silent, "", name).map(|_| ())
}

/// A platlib wheel `demo 1.0` of `members`, the shape the crate's unit tests write.
#[cfg(test)]
pub(crate) fn demo_wheel_spec(members: Vec<Member>) -> WheelSpec {
    WheelSpec {
        file_name: "demo-1.0-py3-none-linux_x86_64.whl".parse().expect("a wheel file name"),
        generator: Generator { name: "test", version: "1" },
        metadata: CoreMetadata { name: "demo".into(), version: "1.0".into(), ..CoreMetadata::default() },
        root: WheelRoot::Platlib,
        variant_json: None,
        entry_points: Vec::new(),
        members,
        inventory: None,
    }
}
