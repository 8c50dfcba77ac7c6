//! The bill of materials every wheel carries (SPEC §10, PEP 770): `.dist-info/sboms/
//! rocm-packager.cdx.json`, CycloneDX 1.6 JSON naming each file of the wheel with its
//! SHA-256 (RECORD's), the TheRock artifact, basedir and path it came from and what was
//! done to it, the upstream project and version of bundled third-party code where the
//! TheRock checkout says them, and the SDK packages the wheel requires.
//!
//! Owns: [`render_sbom`], the one function that writes the document from a wheel's
//! identity, its members with their digests, their [`Provenance`] and its requirements
//! (packaging calls it through the archive writer's inventory hook, [`inventory`]; a tool
//! that rewrites a wheel can call it with the digests it wrote). Does not own: the
//! digests (the writer measures them as the payload streams, so nothing is read twice),
//! reading the checkout (`catalog::third_party`), or checking the document (the release
//! gate, which shares no code with this).

mod document;
mod identifiers;
mod provenance;
mod upstream;

use std::sync::Arc;

pub use provenance::{Edit, Origin, Provenance};

use crate::catalog::third_party::ThirdPartySources;
use crate::plan::{PackagePlan, Plan};
use crate::write::{Inventory, ListedMember, RenderInventory};

/// Where in `.dist-info` the document lies: PEP 770's `sboms/`, named after the tool that
/// wrote it, as auditwheel names its own, so a wheel keeps the documents other tools wrote.
pub const SBOM_PATH: &str = "sboms/rocm-packager.cdx.json";

/// The wheel a document describes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WheelIdentity {
    /// METADATA's `Name`, as the build spells it.
    pub name: String,
    pub version: String,
    /// `{name}-{version}-{tags}.whl`.
    pub file_name: String,
}

/// The document of the wheel `wheel`: `members` are its members with the digests RECORD
/// gives them (its `.dist-info` is left out), `provenance` where each came from, and
/// `requirements` its `Requires-Dist` lines. The same arguments give the same bytes.
pub fn render_sbom(
    wheel: &WheelIdentity,
    members: &[ListedMember<'_>],
    provenance: &Provenance,
    requirements: &[String],
) -> Vec<u8> {
    document::render(wheel, members, provenance, requirements)
}

/// The archive writer's hook that renders the document once the wheel's other members are
/// written; the writer gives the file name.
pub fn inventory(name: &str, version: &str, provenance: Provenance, requirements: Vec<String>) -> Inventory {
    let render = SbomInventory { name: name.to_owned(), version: version.to_owned(), provenance, requirements };
    Inventory { path: SBOM_PATH.to_owned(), render: Arc::new(render) }
}

/// The inventory of a planned package's wheel: its files' origins from the plan, and the
/// devel tarball (the member `tarball`, when it has one) made from its tree's artifacts.
pub fn package_inventory(
    plan: &Plan,
    package: &PackagePlan,
    sources: Option<Arc<ThirdPartySources>>,
    tarball: Option<&str>,
) -> Inventory {
    let mut provenance = Provenance::of_package(package, &plan.artifacts, sources);
    if let (Some(tarball), Some(tree)) = (tarball, &package.devel_tree) {
        provenance.insert(tarball.to_owned(), Origin::Generated { artifacts: tree.artifact_names() });
    }
    inventory(&package.names.distribution, plan.version.as_str(), provenance, package.requires_dist.clone())
}

#[derive(Debug)]
struct SbomInventory {
    name: String,
    version: String,
    provenance: Provenance,
    requirements: Vec<String>,
}

impl RenderInventory for SbomInventory {
    fn render(&self, file_name: &str, members: &[ListedMember<'_>]) -> Vec<u8> {
        let wheel =
            WheelIdentity { name: self.name.clone(), version: self.version.clone(), file_name: file_name.to_owned() };
        render_sbom(&wheel, members, &self.provenance, &self.requirements)
    }
}
