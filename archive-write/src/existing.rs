//! An existing wheel read as the input of a rewrite (a wheel another tool wrote, to be
//! written anew with some members changed): its index, each member's bytes inflated and
//! checked against the index's CRC-32 and size, and, for a member that does not change,
//! its coded bytes copied into the new wheel as they are ([`CodedCopy`]), so only what
//! changes is coded again.
//!
//! Nothing is taken on the wheel's word: the end records and central directory must be
//! whole and name each member once (read within bounds: a wheel announcing more members
//! or a larger index than any real one is refused before its index is read), a member's
//! local header must repeat its name and method and its data lie before the central
//! directory, and its bytes must inflate to the CRC-32 and size the index gives. A copy
//! carries the CRC-32 of the coded bytes read then, and checks it again while copying.
//!
//! A member's sha256 (RECORD's digest) is the caller's to compute from the bytes it is
//! given, and to hand to the copy ([`CodedCopy::with_sha256`]): a caller that changes a
//! large member never needs its old digest, and hashing a gigabyte costs a second.
//!
//! Owns: reading such a wheel. Does not own: what its members mean (the caller's), the
//! writer (`wheel`), reuse of our own earlier output (`previous`, whose index reader and
//! copies this shares).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::deflate::MemberDigest;
use super::input::{open_regular, Links};
use super::previous::{parse_central, read_end, CheckedCopy, OldBytes, OldEntry};
use super::reuse::Copy;
use super::zip::{EntrySums, Method};
use super::WriteError;

/// A wheel with more members than this is no real wheel (the release gate's bound too).
const MAX_MEMBERS: u64 = 200_000;
/// Nor one whose central directory is larger.
const MAX_CENTRAL_BYTES: u64 = 64 << 20;
const READ_BUFFER: usize = 256 << 10;
const S_IFMT: u32 = 0o170_000;
const S_IFLNK: u32 = 0o120_000;
const S_IFDIR: u32 = 0o040_000;

/// One member as the wheel's index describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExistingMember {
    pub name: String,
    /// Its size once inflated.
    pub size: u64,
    /// Any execute bit in its Unix mode.
    pub executable: bool,
    /// A symlink (its Unix mode says so), which a wheel cannot carry.
    pub symlink: bool,
    /// A directory entry (a name ending in `/`), which installers skip.
    pub directory: bool,
}

/// A wheel whose index passed its checks, open for reading.
pub struct ExistingWheel {
    path: PathBuf,
    file: Arc<File>,
    central_start: u64,
    entries: BTreeMap<String, OldEntry>,
    members: Vec<ExistingMember>,
}

/// A member's coded bytes as they are in the wheel, with the sums its entry in a new wheel
/// needs: what [`ExistingWheel::read_member`] returns after checking them. Its sha256 comes
/// from the caller, who hashed the bytes it was given ([`CodedCopy::with_sha256`]).
pub struct CodedCopy {
    name: String,
    method: Method,
    sums: EntrySums,
    /// The codec fingerprint our extra field gives the bytes in the wheel, if it has one
    /// whose CRC-32 of the coded bytes is theirs.
    fingerprint: Option<u32>,
    sha256: Option<[u8; 32]>,
    bytes: OldBytes,
}

impl CodedCopy {
    /// The sha256 of the member's (inflated) bytes, once the caller gave it.
    pub fn sha256(&self) -> Option<[u8; 32]> {
        self.sha256
    }

    /// The copy with the sha256 of the bytes [`ExistingWheel::read_member`] passed on
    /// (RECORD lists it for the member).
    pub fn with_sha256(mut self, sha256: [u8; 32]) -> CodedCopy {
        self.sha256 = Some(sha256);
        self
    }

    /// The member's inflated size.
    pub fn len(&self) -> u64 {
        self.sums.uncompressed
    }

    pub fn is_empty(&self) -> bool {
        self.sums.uncompressed == 0
    }

    /// What the writer copies; a copy whose sha256 was never given cannot be one.
    pub(crate) fn into_copy(self) -> Result<Copy, WriteError> {
        let Some(sha256) = self.sha256 else {
            return Err(WriteError::Invalid { reason: format!("{} is copied without its sha256", self.name) });
        };
        let crc = self.sums.compressed_crc;
        Ok(Copy {
            method: self.method,
            digest: MemberDigest { sha256, len: self.sums.uncompressed },
            sums: self.sums,
            source: Box::new(CheckedCopy { bytes: self.bytes, crc }),
            // Its bytes are the input wheel's, checked as they are copied; no source of
            // an identity was trusted for them.
            unread: false,
            fingerprint: self.fingerprint,
        })
    }
}

impl std::fmt::Debug for CodedCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CodedCopy({} bytes from {})", self.sums.compressed, self.bytes.path.display())
    }
}

impl ExistingWheel {
    /// Opens `path` (a regular file; a symlink to one is followed, as the user named it) and
    /// reads its index.
    pub fn open(path: &Path) -> Result<ExistingWheel, WriteError> {
        let damaged = |reason: String| WriteError::Damaged { path: path.to_path_buf(), reason };
        let file = open_regular(path, Links::Follow)
            .map_err(|source| WriteError::Read { path: path.to_path_buf(), source })?;
        let len = file.metadata().map_err(|source| WriteError::Read { path: path.to_path_buf(), source })?.len();
        let (central_start, central_len, n_entries) = read_end(&file, len).map_err(&damaged)?;
        if n_entries > MAX_MEMBERS || central_len > MAX_CENTRAL_BYTES {
            return Err(damaged(format!(
                "its index announces {n_entries} members in {central_len} bytes, more than any wheel holds \
                 ({MAX_MEMBERS} members, {MAX_CENTRAL_BYTES} bytes)"
            )));
        }
        let mut central = vec![0u8; central_len as usize];
        file.read_exact_at(&mut central, central_start)
            .map_err(|source| WriteError::Read { path: path.to_path_buf(), source })?;
        let entries = parse_central(&central, n_entries, central_start).map_err(&damaged)?;
        let members = entries
            .iter()
            .map(|(name, entry)| ExistingMember {
                name: name.clone(),
                size: entry.uncompressed,
                executable: entry.mode & 0o111 != 0,
                symlink: entry.mode & S_IFMT == S_IFLNK,
                directory: name.ends_with('/') || entry.mode & S_IFMT == S_IFDIR,
            })
            .collect();
        Ok(ExistingWheel { path: path.to_path_buf(), file: Arc::new(file), central_start, entries, members })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every member, in name order.
    pub fn members(&self) -> &[ExistingMember] {
        &self.members
    }

    /// Streams member `name`'s bytes, inflated, to `each`, and checks them against the
    /// index (CRC-32, size); returns what copying its coded bytes needs, but its sha256.
    pub fn read_member(
        &self,
        name: &str,
        each: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> Result<CodedCopy, WriteError> {
        let damaged =
            |reason: String| WriteError::Damaged { path: self.path.clone(), reason: format!("{name}: {reason}") };
        let entry = *self.entries.get(name).ok_or_else(|| damaged("no such member".into()))?;
        let method = match entry.method {
            0 => Method::Stored,
            8 => Method::Deflated,
            other => return Err(damaged(format!("it uses compression method {other}; wheels use deflate or none"))),
        };
        if entry.flags & 0x0001 != 0 {
            return Err(damaged("it is encrypted".into()));
        }
        let start = self.data_start(name, &entry).map_err(damaged)?;
        let mut coded =
            CrcReader { file: &self.file, at: start, end: start + entry.compressed, crc: crc32fast::Hasher::new() };
        let mut crc = crc32fast::Hasher::new();
        let mut len = 0u64;
        let mut buffer = vec![0u8; READ_BUFFER.min(usize::try_from(entry.uncompressed + 1).unwrap_or(READ_BUFFER))];
        let read_error = |source: io::Error| match source.kind() {
            io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput | io::ErrorKind::UnexpectedEof => {
                damaged(format!("its bytes do not inflate: {source}"))
            }
            _ => WriteError::Read { path: self.path.clone(), source },
        };
        {
            let mut reader: Box<dyn Read + '_> = match method {
                Method::Stored => Box::new(&mut coded),
                Method::Deflated => Box::new(flate2::read::DeflateDecoder::new(&mut coded)),
            };
            loop {
                let n = match reader.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                    Err(error) => return Err(read_error(error)),
                };
                len += n as u64;
                if len > entry.uncompressed {
                    return Err(damaged(format!(
                        "it inflates to more than the {} bytes its entry gives",
                        entry.uncompressed
                    )));
                }
                crc.update(&buffer[..n]);
                each(&buffer[..n]).map_err(|source| WriteError::Read { path: self.path.clone(), source })?;
            }
        }
        // The coded bytes past the end of the stream still count for the copy's CRC.
        io::copy(&mut coded, &mut io::sink()).map_err(read_error)?;
        let crc = crc.finalize();
        if len != entry.uncompressed || crc != entry.crc {
            return Err(damaged(format!(
                "it inflates to {len} bytes with CRC-32 {crc:08x}, its entry says {} bytes, {:08x}",
                entry.uncompressed, entry.crc
            )));
        }
        let sums =
            EntrySums { crc, uncompressed: len, compressed: entry.compressed, compressed_crc: coded.crc.finalize() };
        let bytes = OldBytes { path: self.path.clone(), file: Arc::clone(&self.file), start, len: entry.compressed };
        // Our extra field names the coding that made these bytes only if it names these bytes.
        let fingerprint =
            entry.reuse.filter(|(_, coded_crc)| *coded_crc == sums.compressed_crc).map(|(print, _)| print);
        Ok(CodedCopy { name: name.to_owned(), method, sums, sha256: None, bytes, fingerprint })
    }

    /// Where the member's coded bytes start, once its local header repeats its name and
    /// method, and they end before the central directory. Sizes and CRC in the local
    /// header are not compared: a writer that streamed the member left them in a data
    /// descriptor instead, and the index gives them.
    fn data_start(&self, name: &str, entry: &OldEntry) -> Result<u64, String> {
        let mut fixed = [0u8; 30];
        self.file.read_exact_at(&mut fixed, entry.offset).map_err(|_| "its local header is cut off".to_owned())?;
        let u16_at = |at: usize| u16::from_le_bytes([fixed[at], fixed[at + 1]]);
        let signature = u32::from_le_bytes([fixed[0], fixed[1], fixed[2], fixed[3]]);
        let (name_len, extra_len) = (u64::from(u16_at(26)), u64::from(u16_at(28)));
        let mut local_name = vec![0u8; name_len as usize];
        self.file
            .read_exact_at(&mut local_name, entry.offset + 30)
            .map_err(|_| "its local header is cut off".to_owned())?;
        if signature != 0x0403_4b50 || local_name != name.as_bytes() || u16_at(8) != entry.method {
            return Err("its local header disagrees with the index".into());
        }
        let start = entry.offset + 30 + name_len + extra_len;
        match start.checked_add(entry.compressed) {
            Some(end) if end <= self.central_start => Ok(start),
            _ => Err("its bytes run into the index".into()),
        }
    }
}

/// A range of the wheel, read with positioned reads and CRC-32'd as it goes.
struct CrcReader<'a> {
    file: &'a File,
    at: u64,
    end: u64,
    crc: crc32fast::Hasher,
}

impl Read for CrcReader<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let want = (self.end - self.at).min(buffer.len() as u64) as usize;
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buffer[..want], self.at)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the wheel is shorter than its index says"));
        }
        self.crc.update(&buffer[..n]);
        self.at += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};
    use std::sync::Arc;

    use sha2::{Digest, Sha256};

    use super::*;
    use crate::{commit, stage_rewritten_wheel, ArchiveOptions, BuildTime, Generator, MemberData, Reuse, Silent};
    use crate::{RewriteContent, RewriteMember, RewriteSpec, WheelCompression};

    /// Text and noise, so deflate has work and a flipped byte shows.
    fn mixed(len: usize) -> Vec<u8> {
        let mut state = 0x1234_5678_u64;
        (0..len)
            .map(|index| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                if index % 512 < 64 {
                    (state >> 56) as u8
                } else {
                    b"hipMalloc rocblas "[index % 18]
                }
            })
            .collect()
    }

    /// A wheel written by Python's `zipfile` into a pipe, so its members carry data
    /// descriptors (sizes after the data), as streaming writers leave them.
    fn python_wheel(dir: &Path, members: &[(&str, &[u8])]) -> PathBuf {
        let script = "import sys, zipfile\n\
                      members = [line.split('\\t') for line in open(sys.argv[1]).read().splitlines()]\n\
                      with zipfile.ZipFile(sys.stdout.buffer, 'w', zipfile.ZIP_DEFLATED) as z:\n\
                      \x20   for name, path in members:\n\
                      \x20       z.writestr(name, open(path, 'rb').read())\n";
        let mut listed = String::new();
        for (index, (name, bytes)) in members.iter().enumerate() {
            let path = dir.join(format!("member{index}"));
            std::fs::write(&path, bytes).expect("write member");
            listed.push_str(&format!("{name}\t{}\n", path.display()));
        }
        let list = dir.join("members.txt");
        std::fs::write(&list, listed).expect("write list");
        let wheel = dir.join("demo-1.0-py3-none-linux_x86_64.whl");
        let mut python = Command::new("python3")
            .args(["-c", script])
            .arg(&list)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 is needed for this test (apt-get install python3)");
        let mut out = python.stdout.take().expect("stdout");
        let mut bytes = Vec::new();
        out.read_to_end(&mut bytes).expect("read the pipe");
        assert!(python.wait().expect("wait").success());
        std::fs::write(&wheel, bytes).expect("write wheel");
        wheel
    }

    fn sha256(bytes: &[u8]) -> [u8; 32] {
        Sha256::digest(bytes).into()
    }

    #[test]
    fn members_are_read_checked_and_copied_as_coded_bytes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let big = mixed(3 << 20);
        let wheel = python_wheel(
            dir.path(),
            &[
                ("demo/__init__.py", b"x = 1\n"),
                ("demo/big.bin", &big),
                ("demo/lib.so", b"old library"),
                ("demo-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"),
                ("demo-1.0.dist-info/RECORD", b""),
            ],
        );
        let existing = ExistingWheel::open(&wheel).expect("open");
        let names: Vec<&str> = existing.members().iter().map(|member| member.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "demo-1.0.dist-info/METADATA",
                "demo-1.0.dist-info/RECORD",
                "demo/__init__.py",
                "demo/big.bin",
                "demo/lib.so"
            ]
        );
        let mut members = Vec::new();
        let mut streamed = Vec::new();
        for name in ["demo/__init__.py", "demo/big.bin"] {
            let before = streamed.len();
            let copy = existing
                .read_member(name, &mut |bytes| {
                    streamed.extend_from_slice(bytes);
                    Ok(())
                })
                .expect("read");
            let copy = copy.with_sha256(sha256(&streamed[before..]));
            members.push(RewriteMember {
                name: name.to_owned(),
                executable: false,
                content: RewriteContent::Copied(copy),
            });
        }
        assert_eq!(streamed, [b"x = 1\n".as_slice(), &big].concat());
        assert_eq!(members[1].content_sha256(), Some(sha256(&big)));
        // A copy without its sha256 is refused, not written with a wrong RECORD line.
        let unhashed = existing.read_member("demo/lib.so", &mut |_| Ok(())).expect("read");
        assert!(unhashed.sha256().is_none());
        let refused = RewriteSpec {
            file_name: "demo-1.0-py3-none-linux_x86_64.whl".to_owned(),
            dist_info: "demo-1.0.dist-info".to_owned(),
            generator: Generator { name: "test", version: "1" },
            inventory: None,
            members: vec![RewriteMember {
                name: "demo/lib.so".into(),
                executable: false,
                content: RewriteContent::Copied(unhashed),
            }],
        };
        let options = ArchiveOptions {
            compression: WheelCompression::Deflate { level: 6 },
            build_time: BuildTime::DEFAULT,
            reuse: Reuse::Never,
            identities: None,
        };
        let error = stage_rewritten_wheel(dir.path(), refused, &options, &Silent).err().expect("refused");
        assert!(error.to_string().contains("demo/lib.so is copied without its sha256"), "{error}");
        for (name, bytes) in
            [("demo/lib.so", b"new library".to_vec()), ("demo-1.0.dist-info/METADATA", b"Name: demo\n".to_vec())]
        {
            let content = RewriteContent::Data(MemberData::Bytes(Arc::new(bytes)));
            members.push(RewriteMember { name: name.to_owned(), executable: name.ends_with(".so"), content });
        }
        let spec = RewriteSpec {
            file_name: "demo-1.0-py3-none-manylinux_2_17_x86_64.whl".to_owned(),
            dist_info: "demo-1.0.dist-info".to_owned(),
            generator: Generator { name: "test", version: "1" },
            members,
            inventory: None,
        };
        let options = ArchiveOptions {
            compression: WheelCompression::Deflate { level: 6 },
            build_time: BuildTime::DEFAULT,
            reuse: Reuse::Never,
            identities: None,
        };
        let out = dir.path().join("out");
        std::fs::create_dir_all(&out).expect("mkdir");
        let staged = stage_rewritten_wheel(&out, spec, &options, &Silent).expect("stage");
        let written = commit(vec![staged]).expect("commit").pop().expect("one");
        assert_eq!(written.reuse.reused_members, 2);
        assert_eq!(written.reuse.reused_bytes, big.len() as u64 + 6);
        // Read back by Python: every member, and RECORD listing each with its hash.
        let check = "import sys, zipfile, hashlib, base64\n\
                     z = zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None\n\
                     record = z.read('demo-1.0.dist-info/RECORD').decode()\n\
                     for name in z.namelist():\n\
                     \x20   if name.endswith('RECORD'): continue\n\
                     \x20   digest = base64.urlsafe_b64encode(hashlib.sha256(z.read(name)).digest()).rstrip(b'=').decode()\n\
                     \x20   assert f'{name},sha256={digest},' in record, name\n\
                     print(z.read('demo/lib.so').decode(), z.getinfo('demo/lib.so').external_attr >> 16 & 0o777)\n";
        let output = Command::new("python3").args(["-c", check]).arg(&written.path).output().expect("python3");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(String::from_utf8_lossy(&output.stdout), "new library 493\n");
        // The copied member's coded bytes are the input's, byte for byte.
        let coded_of = |path: &Path| -> Vec<u8> {
            let bytes = std::fs::read(path).expect("read");
            let wheel = ExistingWheel::open(path).expect("open");
            let entry = wheel.entries["demo/big.bin"];
            let start = wheel.data_start("demo/big.bin", &entry).expect("local header") as usize;
            bytes[start..start + entry.compressed as usize].to_vec()
        };
        assert!(coded_of(&wheel) == coded_of(&written.path), "the coded bytes were copied");
    }

    #[test]
    fn a_damaged_member_is_named() {
        let dir = tempfile::tempdir().expect("temp dir");
        let big = mixed(1 << 20);
        let wheel = python_wheel(dir.path(), &[("demo/big.bin", &big)]);
        let mut bytes = std::fs::read(&wheel).expect("read");
        let at = bytes.windows(12).position(|window| window == b"demo/big.bin").expect("local header") + 12 + 5000;
        bytes[at] ^= 0x55;
        std::fs::write(&wheel, &bytes).expect("damage");
        let existing = ExistingWheel::open(&wheel).expect("the index is whole");
        let error = existing.read_member("demo/big.bin", &mut |_| Ok(())).expect_err("damaged");
        assert!(matches!(error, WriteError::Damaged { .. }), "{error:?}");
        assert!(error.to_string().contains("demo/big.bin"), "{error}");
        std::fs::write(&wheel, &bytes[..bytes.len() - 10]).expect("truncate");
        assert!(matches!(ExistingWheel::open(&wheel), Err(WriteError::Damaged { .. })));
    }

    impl RewriteMember {
        fn content_sha256(&self) -> Option<[u8; 32]> {
            match &self.content {
                RewriteContent::Copied(copy) => copy.sha256(),
                RewriteContent::Data(_) => None,
            }
        }
    }
}
