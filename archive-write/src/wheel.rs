//! Wheels (PEP 427/491): member order, `.dist-info` contents, RECORD, and streaming every
//! member through the parallel deflate pipeline into the zip container.
//!
//! Owns: the wheel's layout and the member loop (the caller's inventory, rendered from the
//! other members' digests, written after them and before RECORD), which earlier wheel a
//! wheel may copy from: the one at its own final path, in the directory it is written to;
//! and wheels written anew from an existing one ([`RewriteSpec`]: the caller's file name
//! and `.dist-info`, unchanged members copied as coded bytes). Does not own:
//! the zip bytes (`zip`), compression (`deflate`), whether a member may be copied
//! (`reuse`, `previous`), tarball members (`tar`), what the members are (the caller's).

mod names;
mod rewrite;

use names::rendered;
pub use names::{render_inventory, WheelNames};
pub use rewrite::{stage_rewritten_wheel, RewriteContent, RewriteMember, RewriteSpec};

use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::atomic::AtomicFile;
use super::chunk::{Coding, CHUNK_SIZE};
use super::codec::{fingerprint, foreign_fingerprint};
use super::deflate::{self, FinishedMember, MemberDigest, Pipeline};
use super::identity::{read_from, IdentityCache};
use super::member_source::{check_member_name, from_io, known_len, open_member};
use super::metadata::{render_core_metadata, render_entry_points, render_wheel_file};
use super::output_hash::{Hashed, HashedSoFar, HashingWriter};
use super::previous::{Ignored, Needs, Previous};
use super::record::Record;
use super::reuse::{learn_read_sources, prehash, try_copy_hashed, try_copy_tarball, Copy, ReuseCounts};
use super::zip::{EntryHeader, ZipWriter};
use super::{tar, ArchiveOptions, Inventory, Member, MemberData, StagedFile, WheelSpec, WriteError, WrittenFile};
use super::{Progress, Reuse, TarballCompression, WheelCompression};

/// Every member in archive order, the generated `.dist-info` files included, RECORD and
/// the inventory not: sorted by name, the `.dist-info` directory last (the inventory, then
/// RECORD, after everything).
pub fn ordered_members(spec: &WheelSpec, names: &WheelNames) -> Result<Vec<Member>, WriteError> {
    let dist_info_prefix = format!("{}/", names.dist_info);
    let mut generated = vec![
        (format!("{}/METADATA", names.dist_info), render_core_metadata(&spec.metadata)?),
        (format!("{}/WHEEL", names.dist_info), render_wheel_file(spec.generator, &spec.file_name.tag(), spec.root)),
    ];
    if let Some(variant_json) = &spec.variant_json {
        generated.push((format!("{}/variant.json", names.dist_info), variant_json.clone()));
    }
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
    // The inventory takes part in the name checks, then leaves the list: it is written
    // after the others, from their digests.
    let inventory = names.inventory(spec);
    if let Some(name) = &inventory {
        members.push(Member { name: name.clone(), data: MemberData::Bytes(Arc::default()), executable: false });
    }
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
    members.retain(|member| Some(&member.name) != inventory.as_ref());
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
            MemberData::Tarball(tar_spec) => tar::input_len(tar_spec),
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
    let members = ordered_members(spec, &names)?.into_iter().map(|member| (member, None)).collect();
    let target = Target {
        file_name: &names.file_name,
        dist_info: &names.dist_info,
        generator: spec.generator.name,
        inventory: spec.inventory.as_ref(),
    };
    stage_members(dest_dir, &target, members, options, progress)
}

/// What a wheel's files are named after, and what its members' digests render into.
pub(crate) struct Target<'a> {
    file_name: &'a str,
    dist_info: &'a str,
    generator: &'a str,
    inventory: Option<&'a Inventory>,
}

/// Writes `members` (in archive order, each coded or copied), the inventory and RECORD
/// into a temp file in `dest_dir`.
pub(crate) fn stage_members(
    dest_dir: &Path,
    target: &Target<'_>,
    members: Vec<(Member, Option<Copy>)>,
    options: &ArchiveOptions,
    progress: &dyn Progress,
) -> Result<StagedFile, WriteError> {
    let (file_name, generator) = (target.file_name, target.generator);
    let record_name = format!("{}/RECORD", target.dist_info);
    let (members, copies): (Vec<Member>, Vec<Option<Copy>>) = members.into_iter().unzip();
    let copied_len: u64 = copies.iter().flatten().map(|copy| copy.digest.len).sum();
    progress.output_started(file_name, input_len(&members) + copied_len);
    let mut atomic = AtomicFile::create(dest_dir, file_name)?;
    let dest = atomic.dest().to_path_buf();
    let write_error = |error| from_io(error, &dest, false);
    // The old wheel stays under its name, only read, until the commit renames the new one
    // over it; an interrupted run leaves it as it was.
    let (previous, identities) = match options.reuse {
        Reuse::FromPrevious => (open_previous(&dest, &record_name, &members, progress), options.identities),
        Reuse::Never => (None, None),
    };

    // The old wheel's sums as the run that left it recorded them: a wheel that comes out
    // as the old one, with that CRC-32, then needs no sha256 of its own (SPEC §8).
    let recorded = identities.and_then(|cache| cache.output_sums(file_name));
    let out = HashingWriter::new(atomic.file(), previous.as_ref().map(Previous::file), recorded);
    // The buffer gathers headers and small members; a chunk's data (hundreds of KiB) is
    // larger, so it goes to the file as it is instead of being copied through.
    let mut zip = ZipWriter::new(BufWriter::with_capacity(64 << 10, out), options.build_time);
    let context =
        WriteContext { options, progress, file_name, dest: &dest, previous: previous.as_ref(), identities, generator };
    let (mut finished, mut reuse) = write_members(&mut zip, &members, copies, &context)?;
    drop(previous);
    let listed = finished.iter().map(|member| (member.name.as_str(), &member.digest));
    if let Some((name, bytes)) =
        target.inventory.and_then(|inventory| rendered(inventory, target.dist_info, file_name, listed))
    {
        reuse.add_compressed(bytes.len() as u64);
        finished.push(write_whole(&mut zip, name, bytes, options, generator).map_err(write_error)?);
    }
    let mut record = Record::default();
    let mut uncompressed_bytes = 0;
    for member in &finished {
        record.add(&member.name, &member.digest.sha256, member.digest.len);
        uncompressed_bytes += member.digest.len;
    }
    let record = record.finish(&record_name);
    uncompressed_bytes += record.len() as u64;
    reuse.add_compressed(record.len() as u64);
    write_whole(&mut zip, record_name, record, options, generator).map_err(write_error)?;
    let (buffered, _) = zip.finish().map_err(write_error)?;
    let (_, hashed) =
        buffered.into_inner().map_err(|error| write_error(error.into_error()))?.into_parts().map_err(write_error)?;
    // A wheel that came out byte for byte as the one it replaces leaves that one in place:
    // nothing written, synced or renamed (SPEC §8).
    let staged = match hashed {
        Hashed { digest: HashedSoFar::Whole(sums), same_as_previous: true, deferred } => {
            match atomic.keep_previous(sums) {
                Ok(kept) => kept,
                Err(mut atomic) => {
                    if let Some((old, deferred)) = deferred {
                        atomic.fill_from(&old, deferred)?;
                    }
                    atomic.stage_hashed(HashedSoFar::Whole(sums))?
                }
            }
        }
        Hashed { digest, .. } => atomic.stage_hashed(digest)?,
    };
    if let Some(cache) = identities {
        cache.learn_output(file_name, staged.sums);
    }
    progress.output_finished(file_name);
    let written = WrittenFile {
        path: staged.dest().to_path_buf(),
        file_name: file_name.to_owned(),
        n_members: finished.len() + 1,
        uncompressed_bytes,
        compressed_bytes: staged.len,
        sha256: staged.sha256.clone(),
        reuse,
    };
    Ok(StagedFile { written, staged })
}

/// The wheel at `dest` from an earlier run, if it is worth reading for these members;
/// why not is a line for `-v`, or a warning when it is larger than they can use.
fn open_previous(dest: &Path, record: &str, members: &[Member], progress: &dyn Progress) -> Option<Previous> {
    let needs = Needs::of(members.iter().map(|member| member.name.as_str()).chain([record]));
    match Previous::open(dest, record, &needs) {
        Ok(previous) => previous,
        Err(Ignored::Untrusted(reason)) => {
            progress.explain(&format!("not reusing {}: {reason}", dest.display()));
            None
        }
        Err(Ignored::TooLarge(reason)) => {
            progress.warn(&format!(
                "not reusing {}: {reason}; it is not read, and every member is compressed anew",
                dest.display()
            ));
            None
        }
    }
}

/// Codes a small member the writer made itself (RECORD, the inventory) in one piece and
/// writes it.
fn write_whole<W: Write + std::io::Seek>(
    zip: &mut ZipWriter<W>,
    name: String,
    bytes: Vec<u8>,
    options: &ArchiveOptions,
    generator: &str,
) -> std::io::Result<FinishedMember> {
    let digest = MemberDigest { sha256: Sha256::digest(&bytes).into(), len: bytes.len() as u64 };
    let size_bound = deflate::size_bound(bytes.len() as u64);
    let (data, sums, whole_coding) = deflate::code_whole(bytes, coding(options))?;
    let mut header = entry_header(name.clone(), coding(options), false, generator);
    header.method = whole_coding.method();
    zip.write_entry(header, sums, size_bound, &[data])?;
    Ok(FinishedMember { name, digest, crc: sums.crc })
}

fn entry_header(name: String, coding: Coding, executable: bool, generator: &str) -> EntryHeader {
    EntryHeader { name, method: coding.method(), executable, fingerprint: fingerprint(coding, generator) }
}

/// What every member of one wheel is written with.
struct WriteContext<'a> {
    options: &'a ArchiveOptions<'a>,
    progress: &'a dyn Progress,
    file_name: &'a str,
    dest: &'a Path,
    previous: Option<&'a Previous>,
    identities: Option<&'a IdentityCache>,
    /// The generator's name, part of every member's codec fingerprint.
    generator: &'a str,
}

/// Whether a member of this coding is worth copying: a stored member's copy costs what
/// storing it does (xz tarballs are stored), so only members to be deflated are copied
/// (those deflate could not shrink too: copying spares coding their first chunk).
fn worth_copying(coding: Coding) -> bool {
    coding != Coding::Stored
}

/// Streams every member through the pipeline, or copies it from the previous wheel when
/// its bytes did not change; a tarball member is produced on a scoped thread while it is
/// consumed (twice when the old wheel has one: hashed first, coded only if it changed).
fn write_members<W: Write + std::io::Seek>(
    zip: &mut ZipWriter<W>,
    members: &[Member],
    copies: Vec<Option<Copy>>,
    context: &WriteContext,
) -> Result<(Vec<FinishedMember>, ReuseCounts), WriteError> {
    let (options, progress, file_name, dest) = (context.options, context.progress, context.file_name, context.dest);
    let generator = context.generator;
    let mut counts = ReuseCounts::default();
    let member_coding = coding(options);
    let previous_for_files = context.previous.filter(|_| worth_copying(member_coding));
    let headers: Vec<EntryHeader> = members
        .iter()
        .map(|member| entry_header(member.name.clone(), member_coding, member.executable, generator))
        .collect();
    let prehashed = prehash(previous_for_files, context.identities, members, &headers);
    // The identities of the sources read to code them, taken before they were opened.
    let mut read_sources = Vec::new();
    let finished = std::thread::scope(|scope| {
        let mut pipeline = Pipeline::new();
        let rows = members.iter().zip(headers).zip(prehashed).zip(copies).enumerate();
        for (index, (((member, mut header), prehashed), given)) in rows {
            if let Some(copy) = given {
                // Another writer's coded bytes: the fingerprint says no coding of ours made
                // them, unless the archive they come from names the coding that did.
                header.fingerprint = copy.fingerprint.unwrap_or_else(|| foreign_fingerprint(generator));
                let size_bound = deflate::size_bound(copy.sums.uncompressed.max(copy.sums.compressed));
                progress.advance(file_name, copy.digest.len);
                counts.add_reused(copy.digest.len, copy.unread);
                push_copy(&mut pipeline, zip, header, size_bound, copy, dest)?;
                continue;
            }
            match &member.data {
                MemberData::Tarball(tar_spec) => {
                    // An xz stream does not deflate; storing it saves the cores for xz.
                    let member_coding = match tar_spec.compression {
                        TarballCompression::Xz { .. } => Coding::Stored,
                        TarballCompression::None => coding(options),
                    };
                    let header = entry_header(member.name.clone(), member_coding, false, generator);
                    let size_bound = tar::size_bound(tar_spec);
                    let previous = context.previous.filter(|_| worth_copying(member_coding));
                    let hashed = std::cell::RefCell::new(None);
                    let open = || -> Result<Box<dyn Read + Send>, WriteError> {
                        let (reader, producer) =
                            tar::spawn_tarball(scope, tar_spec, &member.name, &super::Silent, file_name);
                        *hashed.borrow_mut() = Some(producer);
                        Ok(Box::new(reader))
                    };
                    let read_error = |error| from_io(error, dest, true);
                    let copy = try_copy_tarball(previous, context.identities, &header, tar_spec, open, read_error);
                    // The hashing producer's own result decides whether what was hashed was
                    // the whole tarball.
                    if let Some(producer) = hashed.into_inner() {
                        join_producer(producer, &member.name)?;
                    }
                    if let Some(copy) = copy? {
                        progress.advance(file_name, tar::input_len(tar_spec));
                        counts.add_reused(copy.digest.len, copy.unread);
                        push_copy(&mut pipeline, zip, header, size_bound, copy, dest)?;
                        continue;
                    }
                    pipeline.begin(header, member_coding, size_bound);
                    if let Some(before) = context.identities.and_then(|cache| read_from(cache, &member.data)) {
                        read_sources.push((index, before));
                    }
                    let (reader, producer) = tar::spawn_tarball(scope, tar_spec, &member.name, progress, file_name);
                    let streamed = stream_member(&mut pipeline, zip, reader, None, None, dest);
                    let produced = join_producer(producer, &member.name);
                    // A failing producer ends the stream early, so the reader saw no error; a
                    // failing reader (a full disk) makes the producer fail with a broken pipe,
                    // which is not the news.
                    counts.add_compressed(streamed?);
                    produced?;
                }
                data => {
                    let size_bound = deflate::size_bound(known_len(data).unwrap_or(0));
                    let hashed = prehashed.transpose().map_err(|error| from_io(error, dest, true))?;
                    let copy = hashed.and_then(|hashed| try_copy_hashed(previous_for_files, &header, hashed));
                    if let Some(copy) = copy {
                        progress.advance(file_name, copy.digest.len);
                        counts.add_reused(copy.digest.len, copy.unread);
                        push_copy(&mut pipeline, zip, header, size_bound, copy, dest)?;
                        continue;
                    }
                    pipeline.begin(header, member_coding, size_bound);
                    if let Some(before) = context.identities.and_then(|cache| read_from(cache, data)) {
                        read_sources.push((index, before));
                    }
                    let reader = open_member(data)?;
                    let progress = Some((progress, file_name));
                    counts.add_compressed(stream_member(&mut pipeline, zip, reader, known_len(data), progress, dest)?);
                }
            }
        }
        pipeline.finish(zip).map_err(|error| from_io(error, dest, false))
    })?;
    if let Some(cache) = context.identities {
        learn_read_sources(cache, members, &finished, read_sources);
    }
    Ok((finished, counts))
}

fn join_producer(
    producer: std::thread::ScopedJoinHandle<'_, Result<(), WriteError>>,
    name: &str,
) -> Result<(), WriteError> {
    producer.join().map_err(|_| WriteError::Invalid { reason: format!("the producer of {name} panicked") })?
}

fn push_copy<W: Write + std::io::Seek>(
    pipeline: &mut Pipeline,
    zip: &mut ZipWriter<W>,
    mut header: EntryHeader,
    size_bound: u64,
    copy: Copy,
    dest: &Path,
) -> Result<(), WriteError> {
    header.method = copy.method;
    pipeline
        .push_copied(header, size_bound, copy.sums, copy.source, copy.digest, zip)
        .map_err(|error| from_io(error, dest, false))
}

/// Reads one member in chunks, hashing it for RECORD, and queues the chunks. `size_hint`
/// is the member's length when known, so a small member gets a small buffer.
fn stream_member<W: Write + std::io::Seek>(
    pipeline: &mut Pipeline,
    zip: &mut ZipWriter<W>,
    mut reader: impl Read,
    size_hint: Option<u64>,
    progress: Option<(&dyn Progress, &str)>,
    dest: &Path,
) -> Result<u64, WriteError> {
    let mut hasher = Sha256::new();
    let mut len = 0u64;
    let mut read = |len: u64| {
        let left = size_hint.map(|size| size.saturating_sub(len));
        read_chunk(&mut reader, left).map_err(|error| from_io(error, dest, true))
    };
    // One chunk is read ahead, so each chunk is known to be its member's last or not when
    // it is queued (only the last one keeps its final block); an empty member is one
    // empty chunk.
    let mut buffer = read(0)?;
    loop {
        let n = buffer.len();
        hasher.update(&buffer);
        len += n as u64;
        if let Some((progress, file_name)) = progress {
            progress.advance(file_name, n as u64);
        }
        let next = match n < CHUNK_SIZE {
            true => Vec::new(),
            false => read(len)?,
        };
        let last = next.is_empty();
        pipeline.push_chunk(buffer, last, zip).map_err(|error| from_io(error, dest, false))?;
        if last {
            break;
        }
        buffer = next;
    }
    pipeline
        .end(MemberDigest { sha256: hasher.finalize().into(), len })
        .map_err(|error| from_io(error, dest, false))?;
    Ok(len)
}

/// The next chunk of a member: `CHUNK_SIZE` bytes, fewer only at its end (chunk boundaries
/// are fixed, see `deflate`). The buffer grows as bytes arrive instead of being zeroed at
/// full size up front: a tree of 200,000 headers would otherwise cost 200,000 chunk-sized memsets.
fn read_chunk(reader: &mut impl Read, left: Option<u64>) -> std::io::Result<Vec<u8>> {
    // One byte more than expected, so reading the end needs no second allocation.
    let capacity = left.map_or(CHUNK_SIZE, |left| usize::try_from(left.saturating_add(1)).unwrap_or(CHUNK_SIZE));
    let mut buffer = Vec::with_capacity(capacity.min(CHUNK_SIZE));
    reader.by_ref().take(CHUNK_SIZE as u64).read_to_end(&mut buffer)?;
    Ok(buffer)
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::sync::Arc;

    use crate::record::{hex, parse_record};
    use crate::{
        stage_tree, write_wheel, ArchiveOptions, BuildTime, Inventory, ListedMember, Member, MemberData,
        RenderInventory, Reuse, Silent, WheelCompression, WheelSpec, WriteError,
    };

    /// Lists the wheel's file name, then one `name sha256 size` line per member.
    #[derive(Debug)]
    struct Listing;

    impl RenderInventory for Listing {
        fn render(&self, file_name: &str, members: &[ListedMember<'_>]) -> Vec<u8> {
            let mut text = format!("{file_name}\n");
            for member in members {
                text.push_str(&format!("{} {} {}\n", member.name, hex(&member.sha256), member.size));
            }
            text.into_bytes()
        }
    }

    fn spec(inventory_path: &str) -> WheelSpec {
        let member = |name: &str, bytes: &[u8]| Member {
            name: name.to_owned(),
            data: MemberData::Bytes(Arc::new(bytes.to_vec())),
            executable: false,
        };
        let mut spec = crate::demo_wheel_spec(vec![
            member("demo/z.py", b"z = 26\n"),
            member("demo/__init__.py", b"x = 1\n"),
            member("demo/data/table.bin", &[7u8; 300_000]),
        ]);
        spec.inventory = Some(Inventory { path: inventory_path.to_owned(), render: Arc::new(Listing) });
        spec
    }

    /// What the inventory must hold: every RECORD line but its own and RECORD's, in order.
    fn expected_listing(file_name: &str, record: &str, inventory: &str) -> String {
        let lines = parse_record(record).expect("RECORD parses");
        let mut expected = format!("{file_name}\n");
        for name in record.lines().filter_map(|line| line.split(',').next()) {
            if let Some(line) = lines.get(name).filter(|_| name != inventory) {
                expected.push_str(&format!("{name} {} {}\n", hex(&line.sha256), line.size));
            }
        }
        expected
    }

    fn options(reuse: Reuse) -> ArchiveOptions<'static> {
        ArchiveOptions {
            compression: WheelCompression::Deflate { level: 6 },
            build_time: BuildTime::DEFAULT,
            reuse,
            identities: None,
        }
    }

    #[test]
    fn the_inventory_lists_every_member_before_it_and_record_lists_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let written =
            write_wheel(dir.path(), &spec("inventory/list.txt"), &options(Reuse::Never), &Silent).expect("writes");
        let mut zip = zip::ZipArchive::new(std::fs::File::open(&written.path).expect("open")).expect("a zip");
        let names: Vec<String> = (0..zip.len())
            .map(|index| String::from_utf8_lossy(zip.by_index(index).expect("member").name_raw()).into_owned())
            .collect();
        let mut read = |name: &str| {
            let mut text = String::new();
            zip.by_name(name).expect("member").read_to_string(&mut text).expect("read");
            text
        };
        let inventory_name = "demo-1.0.dist-info/inventory/list.txt";
        assert_eq!(names[names.len() - 2..], [inventory_name, "demo-1.0.dist-info/RECORD"], "{names:?}");
        let (inventory, record) = (read(inventory_name), read("demo-1.0.dist-info/RECORD"));
        assert_eq!(inventory, expected_listing(&written.file_name, &record, inventory_name));
        assert!(inventory.contains("demo/data/table.bin ") && inventory.contains("demo-1.0.dist-info/METADATA "));
        let own = parse_record(&record).expect("parses")[inventory_name];
        assert_eq!(own.size, inventory.len() as u64, "RECORD lists the inventory with its size");
        assert_eq!(written.n_members, names.len());
    }

    #[test]
    fn an_unchanged_rerun_with_an_inventory_leaves_the_wheel_as_it_was() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = write_wheel(dir.path(), &spec("list.txt"), &options(Reuse::FromPrevious), &Silent).expect("writes");
        let bytes = std::fs::read(&first.path).expect("read");
        let again = write_wheel(dir.path(), &spec("list.txt"), &options(Reuse::FromPrevious), &Silent).expect("writes");
        assert_eq!(std::fs::read(&again.path).expect("read"), bytes);
        // Payload and metadata copied; the inventory and RECORD are made anew (small).
        assert_eq!((again.reuse.reused_members, again.reuse.compressed_members), (5, 2), "{:?}", again.reuse);
    }

    #[test]
    fn a_tree_carries_the_inventory_of_its_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let staged = stage_tree(dir.path(), &spec("inventory/list.txt")).expect("stages");
        let root = crate::commit_trees(vec![staged]).expect("commits").pop().expect("one tree");
        let read = |name: &str| std::fs::read_to_string(root.join(name)).expect("read");
        let inventory_name = "demo-1.0.dist-info/inventory/list.txt";
        let record = read("demo-1.0.dist-info/RECORD");
        let file_name = "demo-1.0-py3-none-linux_x86_64.whl";
        assert_eq!(read(inventory_name), expected_listing(file_name, &record, inventory_name));
        assert!(record.contains(inventory_name));
    }

    #[test]
    fn an_inventory_named_like_another_member_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let error = write_wheel(dir.path(), &spec("METADATA"), &options(Reuse::Never), &Silent).expect_err("clash");
        assert!(matches!(&error, WriteError::Invalid { reason } if reason.contains("twice")), "{error}");
        let error = write_wheel(dir.path(), &spec("../escape"), &options(Reuse::Never), &Silent).expect_err("bad");
        assert!(matches!(&error, WriteError::Invalid { .. }), "{error}");
    }
}
