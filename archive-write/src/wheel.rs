//! Wheels (PEP 427/491): member order, `.dist-info` contents, RECORD, and streaming every
//! member through the parallel deflate pipeline into the zip container.
//!
//! Owns: the wheel's layout and the member loop. Does not own: the zip bytes (`zip`),
//! compression (`deflate`), the devel tarball (`tar`), what the members are (`plan`).

use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::atomic::AtomicFile;
use super::deflate::{self, Coding, FinishedMember, MemberDigest, Pipeline, CHUNK_SIZE, DICTIONARY_SIZE};
use super::member::{check_member_name, from_io, known_len, open_member};
use super::metadata::{
    check_platform_tag, file_name_version, normalize_dist_name, render_core_metadata, render_entry_points,
    render_wheel_file,
};
use super::record::Record;
use super::zip::{EntryHeader, ZipWriter};
use super::{tar, ArchiveOptions, Member, MemberData, StagedFile, WheelSpec, WriteError, WrittenFile};
use super::{DevelTarballCompression, Progress, WheelCompression};

/// The names a wheel's files derive from its metadata.
pub struct WheelNames {
    /// `{name}-{version}` as file names spell it.
    pub stem: String,
    pub file_name: String,
    pub dist_info: String,
}

impl WheelNames {
    pub fn new(spec: &WheelSpec) -> Result<WheelNames, WriteError> {
        super::metadata::check_metadata(&spec.metadata)?;
        check_platform_tag(&spec.platform_tag)?;
        let stem =
            format!("{}-{}", normalize_dist_name(&spec.metadata.name), file_name_version(&spec.metadata.version));
        Ok(WheelNames {
            file_name: format!("{stem}-py3-none-{}.whl", spec.platform_tag),
            dist_info: format!("{stem}.dist-info"),
            stem,
        })
    }

    pub fn record(&self) -> String {
        format!("{}/RECORD", self.dist_info)
    }
}

/// Every member in archive order, the generated `.dist-info` files included, RECORD not:
/// sorted by name, the `.dist-info` directory last (RECORD after everything).
pub fn ordered_members(spec: &WheelSpec, names: &WheelNames) -> Result<Vec<Member>, WriteError> {
    let dist_info_prefix = format!("{}/", names.dist_info);
    let mut generated = vec![
        (format!("{}/METADATA", names.dist_info), render_core_metadata(&spec.metadata)?),
        (format!("{}/WHEEL", names.dist_info), render_wheel_file(&spec.platform_tag)),
    ];
    if !spec.entry_points.is_empty() {
        generated.push((format!("{}/entry_points.txt", names.dist_info), render_entry_points(&spec.entry_points)?));
    }
    let mut members: Vec<Member> = spec.members.clone();
    members.extend(generated.into_iter().map(|(name, bytes)| Member {
        name,
        data: MemberData::Bytes(Arc::new(bytes)),
        executable: false,
    }));
    members.push(Member { name: names.record(), data: MemberData::Bytes(Arc::default()), executable: false });
    members.sort_by(|a, b| {
        let key = |member: &Member| (member.name.starts_with(&dist_info_prefix), member.name == names.record());
        key(a).cmp(&key(b)).then_with(|| a.name.cmp(&b.name))
    });
    for pair in members.windows(2) {
        if pair[0].name == pair[1].name {
            return Err(WriteError::Invalid {
                reason: format!("{} is in the wheel twice (or clashes with a generated file)", pair[0].name),
            });
        }
    }
    for member in &members {
        check_member_name(&member.name)?;
    }
    members.pop(); // RECORD is written last, from the hashes.
    Ok(members)
}

fn coding(options: &ArchiveOptions) -> Coding {
    match options.compression {
        WheelCompression::Stored => Coding::Stored,
        WheelCompression::Deflate { level } => Coding::Deflate { level: level.min(9) },
    }
}

/// Input bytes of a wheel, for progress.
fn input_len(members: &[Member]) -> u64 {
    members
        .iter()
        .map(|member| match &member.data {
            MemberData::DevelTar(tar_spec) => tar::input_len(tar_spec),
            data => known_len(data).unwrap_or(0),
        })
        .sum()
}

/// Writes the wheel to a temp file in `dest_dir`, staged for `super::commit`.
pub fn stage_wheel(
    dest_dir: &Path,
    spec: &WheelSpec,
    options: &ArchiveOptions,
    progress: &dyn Progress,
) -> Result<StagedFile, WriteError> {
    let names = WheelNames::new(spec)?;
    let members = ordered_members(spec, &names)?;
    progress.output_started(&names.file_name, input_len(&members));
    let mut atomic = AtomicFile::create(dest_dir, &names.file_name)?;
    let dest = atomic.dest().to_path_buf();
    let write_error = |error| from_io(error, &dest, false);

    let mut zip = ZipWriter::new(BufWriter::with_capacity(1 << 20, atomic.file()), options.build_time);
    let finished = write_members(&mut zip, &members, options, progress, &names.file_name, &dest)?;
    let mut record = Record::default();
    let mut uncompressed_bytes = 0;
    for member in &finished {
        record.add(&member.name, &member.digest.sha256, member.digest.len);
        uncompressed_bytes += member.digest.len;
    }
    let record = record.finish(&names.record());
    uncompressed_bytes += record.len() as u64;
    let (parts, sums) = deflate::code_whole(record, coding(options)).map_err(write_error)?;
    let header = EntryHeader { name: names.record(), method: coding(options).method(), executable: false };
    zip.write_entry(header, sums, &parts).map_err(write_error)?;
    let (mut buffered, _) = zip.finish().map_err(write_error)?;
    buffered.flush().map_err(write_error)?;
    drop(buffered);

    let staged = atomic.stage()?;
    progress.output_finished(&names.file_name);
    let written = WrittenFile {
        path: staged.dest().to_path_buf(),
        file_name: names.file_name,
        n_members: finished.len() + 1,
        uncompressed_bytes,
        compressed_bytes: staged.len,
        sha256: staged.sha256.clone(),
    };
    Ok(StagedFile { written, staged })
}

/// Streams every member through the pipeline; the devel tarball is produced on a scoped
/// thread while it is consumed.
fn write_members<W: Write + std::io::Seek>(
    zip: &mut ZipWriter<W>,
    members: &[Member],
    options: &ArchiveOptions,
    progress: &dyn Progress,
    file_name: &str,
    dest: &Path,
) -> Result<Vec<FinishedMember>, WriteError> {
    std::thread::scope(|scope| {
        let mut pipeline = Pipeline::new();
        for member in members {
            match &member.data {
                MemberData::DevelTar(tar_spec) => {
                    // An xz stream does not deflate; storing it saves the cores for xz.
                    let member_coding = match tar_spec.compression {
                        DevelTarballCompression::Xz { .. } => Coding::Stored,
                        DevelTarballCompression::None => coding(options),
                    };
                    let header =
                        EntryHeader { name: member.name.clone(), method: member_coding.method(), executable: false };
                    pipeline.begin(header, member_coding, tar::size_bound(tar_spec));
                    let (reader, producer) =
                        tar::spawn_devel_tarball(scope, tar_spec, &member.name, progress, file_name);
                    let streamed = stream_member(&mut pipeline, zip, reader, None, member_coding, None, dest);
                    let produced = producer.join().map_err(|_| WriteError::Invalid {
                        reason: format!("the producer of {} panicked", member.name),
                    })?;
                    // A failing producer ends the stream early, so the reader saw no error; a
                    // failing reader (a full disk) makes the producer fail with a broken pipe,
                    // which is not the news.
                    streamed?;
                    produced?;
                }
                data => {
                    let len = known_len(data).unwrap_or(0);
                    let member_coding = coding(options);
                    let header = EntryHeader {
                        name: member.name.clone(),
                        method: member_coding.method(),
                        executable: member.executable,
                    };
                    pipeline.begin(header, member_coding, deflate::size_bound(len));
                    let reader = open_member(data)?;
                    let progress = Some((progress, file_name));
                    stream_member(&mut pipeline, zip, reader, known_len(data), member_coding, progress, dest)?;
                }
            }
        }
        pipeline.finish(zip).map_err(|error| from_io(error, dest, false))
    })
}

/// Reads one member in chunks, hashing it for RECORD, and queues the chunks. `size_hint`
/// is the member's length when known, so a small member gets a small buffer.
fn stream_member<W: Write + std::io::Seek>(
    pipeline: &mut Pipeline,
    zip: &mut ZipWriter<W>,
    mut reader: impl Read,
    size_hint: Option<u64>,
    coding: Coding,
    progress: Option<(&dyn Progress, &str)>,
    dest: &Path,
) -> Result<(), WriteError> {
    let mut hasher = Sha256::new();
    let mut len = 0u64;
    let mut dictionary = Vec::new();
    loop {
        let left = size_hint.map(|size| size.saturating_sub(len));
        let buffer = read_chunk(&mut reader, left).map_err(|error| from_io(error, dest, true))?;
        let n = buffer.len();
        if n == 0 {
            break;
        }
        hasher.update(&buffer);
        len += n as u64;
        if let Some((progress, file_name)) = progress {
            progress.advance(file_name, n as u64);
        }
        let next_dictionary = match coding {
            Coding::Stored => Vec::new(),
            Coding::Deflate { .. } => buffer[n.saturating_sub(DICTIONARY_SIZE)..].to_vec(),
        };
        pipeline
            .push_chunk(buffer, std::mem::replace(&mut dictionary, next_dictionary), zip)
            .map_err(|error| from_io(error, dest, false))?;
        if n < CHUNK_SIZE {
            break;
        }
    }
    pipeline.end(MemberDigest { sha256: hasher.finalize().into(), len }).map_err(|error| from_io(error, dest, false))
}

/// The next chunk of a member: `CHUNK_SIZE` bytes, fewer only at its end (chunk boundaries
/// are fixed, see `deflate`). The buffer grows as bytes arrive instead of being zeroed at
/// full size up front: a tree of 200,000 headers would otherwise cost 200,000 1 MiB memsets.
fn read_chunk(reader: &mut impl Read, left: Option<u64>) -> std::io::Result<Vec<u8>> {
    // One byte more than expected, so reading the end needs no second allocation.
    let capacity = left.map_or(CHUNK_SIZE, |left| usize::try_from(left.saturating_add(1)).unwrap_or(CHUNK_SIZE));
    let mut buffer = Vec::with_capacity(capacity.min(CHUNK_SIZE));
    reader.by_ref().take(CHUNK_SIZE as u64).read_to_end(&mut buffer)?;
    Ok(buffer)
}
