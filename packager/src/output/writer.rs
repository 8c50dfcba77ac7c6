//! How a run's outputs are staged and committed, behind one trait: [`OutputWriter`]
//! (add a wheel, add the sdist, finish by committing them all, then clear our stale
//! outputs), written once as archives (`dist/`, [`Archives`]) and once as
//! `--no-build-packages` trees ([`Trees`]). The output stage runs one flow over either,
//! so trees get the same report, completeness check and stale removal as archives.
//!
//! Owns: the two forms' staging, commit and stale removal, and the variant outputs that
//! only archives have (SPEC §9). Does not own: the specs (`spec`), the flow and its order
//! (the output stage), the destination's rules (`destination`).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use archive_write::{ArchiveOptions, Member, MemberData, SdistSpec, StagedFile, StagedTree, WheelSpec};

use crate::config::DevelTarballCompression;
use crate::identity;
use crate::progress::Progress;

use super::destination::lock::DestLock;
use super::destination::stale;
use super::report::OutputReport;
use super::spec::{core_metadata, GENERATOR};
use super::{variants, OutputError, Run};

/// An output staged by the writer `W`, with its line of the report.
pub(super) type Staged<W> = (OutputReport, <W as OutputWriter>::Staged);

/// One form of a run's outputs: each output is staged under a temp name (removed if
/// dropped), and [`OutputWriter::finish`] puts all of them in place together (SPEC §5).
pub(super) trait OutputWriter: Sync {
    /// An output until the commit.
    type Staged: Send;

    /// The devel tarball's compression in this form.
    fn devel_tarball(&self) -> DevelTarballCompression;

    /// Stages the wheel of `spec` (`package` names it in the report).
    fn add_wheel(&self, package: &str, spec: &WheelSpec) -> Result<(OutputReport, Self::Staged), OutputError>;

    /// Stages the sdist of `spec`.
    fn add_sdist(&self, spec: &SdistSpec) -> Result<(OutputReport, Self::Staged), OutputError>;

    /// Stages `--variants`' outputs (SPEC §9), where this form has them.
    fn add_variants(&self, run: &Run<'_>) -> Result<Vec<(OutputReport, Self::Staged)>, OutputError>;

    /// Puts every staged output in place, all or none.
    fn finish(&self, staged: Vec<Self::Staged>) -> Result<(), OutputError>;

    /// After a full run's commit: removes our outputs of `version` in the destination that
    /// are not among `produced` (the names this run committed); returns them.
    fn remove_stale(&self, version: &str, produced: &BTreeSet<String>) -> Result<Vec<PathBuf>, OutputError>;

    /// How the wheel of `file_name_form` at `version` is named in this form, for the
    /// completeness check's message.
    fn wheel_name(&self, file_name_form: &str, version: &str) -> String;

    /// How the sdist of `file_name_form` at `version` is named in this form.
    fn sdist_name(&self, file_name_form: &str, version: &str) -> String;
}

/// Wheels and the sdist as archives in `dist/`, with `--variants`' outputs.
pub(super) struct Archives<'a> {
    pub lock: &'a DestLock,
    pub options: ArchiveOptions<'a>,
    pub devel_tarball: DevelTarballCompression,
    pub progress: &'a dyn Progress,
}

impl OutputWriter for Archives<'_> {
    type Staged = StagedFile;

    fn devel_tarball(&self) -> DevelTarballCompression {
        self.devel_tarball
    }

    fn add_wheel(&self, package: &str, spec: &WheelSpec) -> Result<(OutputReport, StagedFile), OutputError> {
        let started = Instant::now();
        let file = archive_write::stage_wheel(self.lock.output_dir(), spec, &self.options, self.progress)?;
        Ok((OutputReport::new(package, &file.written, started), file))
    }

    fn add_sdist(&self, spec: &SdistSpec) -> Result<(OutputReport, StagedFile), OutputError> {
        let started = Instant::now();
        let file = archive_write::stage_sdist(self.lock.output_dir(), spec, &self.options)?;
        self.progress.output_finished(&file.written.file_name);
        Ok((OutputReport::new(&spec.metadata.name, &file.written, started), file))
    }

    fn add_variants(&self, run: &Run<'_>) -> Result<Vec<(OutputReport, StagedFile)>, OutputError> {
        let Some(set) = &run.plan.variants else { return Ok(Vec::new()) };
        let outputs =
            variants::variant_outputs(set, run.plan, run.tags).map_err(|message| OutputError::Invalid { message })?;
        let mut staged = Vec::new();
        for wheel in outputs.wheels {
            let members = wheel.python.files.into_iter().map(|file| Member {
                name: file.path,
                data: MemberData::Bytes(Arc::new(file.bytes)),
                executable: file.executable,
            });
            let label = wheel.variant.as_ref().map(|(label, _)| label.as_str());
            let inventory = run.generated_sbom(&wheel.distribution, &wheel.requires_dist);
            let spec = WheelSpec {
                file_name: identity::wheel_file_name(
                    &wheel.distribution,
                    &run.plan.version,
                    &wheel.platform_tag,
                    label,
                )
                .map_err(archive_write::WriteError::from)?,
                metadata: core_metadata(&wheel.distribution, &run.plan.version, wheel.requires_dist),
                generator: GENERATOR,
                root: wheel.root,
                variant_json: wheel.variant.map(|(_, json)| json),
                entry_points: wheel.python.entry_points,
                members: members.collect(),
                inventory,
            };
            staged.push(self.add_wheel(&wheel.distribution, &spec)?);
        }
        let started = Instant::now();
        let (name, bytes) = outputs.index_file;
        let file = archive_write::stage_file(self.lock.output_dir(), &name, &bytes)?;
        self.progress.output_finished(&name);
        staged.push((OutputReport::new(identity::device_variants_distribution(), &file.written, started), file));
        Ok(staged)
    }

    fn finish(&self, staged: Vec<StagedFile>) -> Result<(), OutputError> {
        self.lock.commit(staged)?;
        Ok(())
    }

    fn remove_stale(&self, version: &str, produced: &BTreeSet<String>) -> Result<Vec<PathBuf>, OutputError> {
        Ok(stale::remove_stale_archives(self.lock.output_dir(), version, produced)?)
    }

    fn wheel_name(&self, file_name_form: &str, version: &str) -> String {
        format!("{file_name_form}-{version}-*.whl")
    }

    fn sdist_name(&self, file_name_form: &str, version: &str) -> String {
        format!("{file_name_form}-{version}.tar.gz")
    }
}

/// `--no-build-packages`: each wheel and the sdist laid out as the directory it unpacks
/// to, in the destination itself. Trees have no compression: the devel tarball's entries
/// are laid out as files.
pub(super) struct Trees<'a> {
    pub lock: &'a DestLock,
    pub progress: &'a dyn Progress,
}

impl OutputWriter for Trees<'_> {
    type Staged = StagedTree;

    fn devel_tarball(&self) -> DevelTarballCompression {
        DevelTarballCompression::None
    }

    fn add_wheel(&self, package: &str, spec: &WheelSpec) -> Result<(OutputReport, StagedTree), OutputError> {
        let started = Instant::now();
        let tree = archive_write::stage_tree(self.lock.output_dir(), spec)?;
        Ok((OutputReport::tree(package, &tree, started), tree))
    }

    fn add_sdist(&self, spec: &SdistSpec) -> Result<(OutputReport, StagedTree), OutputError> {
        let started = Instant::now();
        let tree = archive_write::stage_sdist_tree(self.lock.output_dir(), spec)?;
        Ok((OutputReport::tree(&spec.metadata.name, &tree, started), tree))
    }

    /// Variant wheels are a way to install archives (SPEC §9); a tree run has none.
    fn add_variants(&self, _run: &Run<'_>) -> Result<Vec<(OutputReport, StagedTree)>, OutputError> {
        Ok(Vec::new())
    }

    fn finish(&self, staged: Vec<StagedTree>) -> Result<(), OutputError> {
        for root in self.lock.commit_trees(staged)? {
            self.progress.output_finished(&root.display().to_string());
        }
        Ok(())
    }

    fn remove_stale(&self, version: &str, produced: &BTreeSet<String>) -> Result<Vec<PathBuf>, OutputError> {
        Ok(stale::remove_stale_trees(self.lock.output_dir(), version, produced)?)
    }

    fn wheel_name(&self, file_name_form: &str, version: &str) -> String {
        format!("{file_name_form}-{version}/")
    }

    fn sdist_name(&self, file_name_form: &str, version: &str) -> String {
        format!("{file_name_form}-{version}/")
    }
}
