//! The CycloneDX 1.6 JSON document (SPEC §10): the wheel as `metadata.component`, one
//! component per TheRock artifact holding its files (and, inside it, the third-party
//! project a file belongs to), the files rocm-packager made, and the SDK packages the
//! wheel requires, which `dependencies` names.
//!
//! Owns: the document's shape and order (components by name, files by path, keys as the
//! structs declare them), written compact with its serial number derived from itself.
//! Does not own: where members came from (`provenance`), which project a third-party file
//! is (`upstream`), identifiers' spelling (`identifiers`). The release gate reads the
//! document with its own code (it shares none with the writer).

use std::collections::BTreeMap;

use serde::Serialize;

use super::identifiers::{generic_purl, parse_requirement, pypi_purl, serial_number};
use super::provenance::{Edit, Origin, Provenance};
use super::upstream::{upstream, Upstream};
use super::WheelIdentity;
use crate::input::catalog::ArtifactName;
use crate::input::third_party::{SourceProject, LLVM_VERSION_CMAKE};
use archive_write::ListedMember;

const SCHEMA: &str = "http://cyclonedx.org/schema/bom-1.6.schema.json";
const TOOL: &str = "rocm-packager";
/// The serial number's place while the document is hashed (the nil UUID).
const NIL_SERIAL: &str = "urn:uuid:00000000-0000-0000-0000-000000000000";

#[derive(Serialize)]
struct Bom {
    #[serde(rename = "$schema")]
    schema: &'static str,
    #[serde(rename = "bomFormat")]
    bom_format: &'static str,
    #[serde(rename = "specVersion")]
    spec_version: &'static str,
    #[serde(rename = "serialNumber")]
    serial_number: Option<&'static str>,
    version: u32,
    metadata: Metadata,
    components: Vec<Component>,
    dependencies: Vec<Dependency>,
}

#[derive(Serialize)]
struct Metadata {
    lifecycles: [Lifecycle; 1],
    tools: Tools,
    component: Component,
    properties: Vec<Property>,
}

#[derive(Serialize)]
struct Lifecycle {
    phase: &'static str,
}

#[derive(Serialize)]
struct Tools {
    components: Vec<Component>,
}

#[derive(Serialize, Default)]
struct Component {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(rename = "bom-ref")]
    bom_ref: String,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scope: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    purl: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    hashes: Vec<Hash>,
    #[serde(rename = "externalReferences", skip_serializing_if = "Vec::is_empty")]
    external_references: Vec<ExternalReference>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    properties: Vec<Property>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    components: Vec<Component>,
}

#[derive(Serialize)]
struct Hash {
    alg: &'static str,
    content: String,
}

#[derive(Serialize)]
struct ExternalReference {
    #[serde(rename = "type")]
    kind: &'static str,
    url: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    hashes: Vec<Hash>,
}

#[derive(Serialize)]
struct Property {
    name: &'static str,
    value: String,
}

#[derive(Serialize)]
struct Dependency {
    #[serde(rename = "ref")]
    reference: String,
    #[serde(rename = "dependsOn")]
    depends_on: Vec<String>,
}

fn property(name: &'static str, value: impl Into<String>) -> Property {
    Property { name, value: value.into() }
}

/// Whether a member is wheel metadata (`{name}-{version}.dist-info/…`), which describes the
/// wheel rather than being part of it, and is left out.
fn is_dist_info(member: &str) -> bool {
    member.split('/').next().is_some_and(|first| first.ends_with(".dist-info"))
}

/// The document's bytes: compact JSON and a newline.
pub fn render(
    wheel: &WheelIdentity,
    members: &[ListedMember<'_>],
    provenance: &Provenance,
    requirements: &[String],
) -> Vec<u8> {
    let wheel_ref = pypi_purl(&wheel.name, Some(&wheel.version), Some(&wheel.file_name));
    let mut contents = Contents::default();
    for member in members.iter().filter(|member| !is_dist_info(member.name)) {
        contents.add(member, provenance);
    }
    let requirements = requirement_components(requirements);
    let dependencies = vec![Dependency {
        reference: wheel_ref.clone(),
        depends_on: requirements.iter().map(|component| component.bom_ref.clone()).collect(),
    }];
    let mut components = contents.into_components();
    components.extend(requirements);
    let sources = match &provenance.sources {
        Some(_) => "the TheRock checkout: third-party/sysdeps/{linux,common}/*/CMakeLists.txt and \
                    compiler/amd-llvm/cmake/Modules/LLVMVersion.cmake"
            .to_owned(),
        None => "none: packaged without a TheRock checkout, so bundled third-party files (lib/rocm_sysdeps, \
                 lib/llvm) are known by their file names only, a shared library's being its SONAME"
            .to_owned(),
    };
    let bom = Bom {
        schema: SCHEMA,
        bom_format: "CycloneDX",
        spec_version: "1.6",
        serial_number: Some(NIL_SERIAL),
        version: 1,
        metadata: Metadata {
            lifecycles: [Lifecycle { phase: "build" }],
            tools: Tools {
                components: vec![Component {
                    kind: "application",
                    bom_ref: format!("tool:{TOOL}"),
                    name: TOOL.to_owned(),
                    version: Some(env!("CARGO_PKG_VERSION").to_owned()),
                    ..Component::default()
                }],
            },
            component: Component {
                kind: "library",
                bom_ref: wheel_ref.clone(),
                name: wheel.name.clone(),
                version: Some(wheel.version.clone()),
                description: Some(format!(
                    "the wheel {}; its purl names the distribution by its normalised PyPI name (PEP 503), \
                     while name is METADATA's Name as the build spells it",
                    wheel.file_name
                )),
                purl: Some(wheel_ref),
                ..Component::default()
            },
            properties: vec![property("rocm-packager:third-party-sources", sources)],
        },
        components,
        dependencies,
    };
    let mut bytes = serde_json::to_vec(&bom).expect("plain structs serialise");
    bytes.push(b'\n');
    // The serial number is made from the document with the nil UUID in its place, then
    // written over it: one serialisation, however many files. It is the fourth key, after
    // three fixed ones, so the first occurrence is its own.
    let at = bytes.windows(NIL_SERIAL.len()).position(|window| window == NIL_SERIAL.as_bytes());
    let at = at.expect("the serial number is in the document");
    let serial = serial_number(&bytes);
    bytes[at..at + serial.len()].copy_from_slice(serial.as_bytes());
    bytes
}

/// The wheel's files, grouped as the document nests them.
#[derive(Default)]
struct Contents {
    /// Artifact directory name → its files, and its third-party projects with theirs.
    artifacts: BTreeMap<String, ArtifactFiles>,
    /// Another wheel's file name → the files taken from it.
    wheels: BTreeMap<String, Vec<Component>>,
    generated: Vec<Component>,
}

#[derive(Default)]
struct ArtifactFiles {
    files: Vec<Component>,
    /// By bom-ref: the project's component (its files inside).
    projects: BTreeMap<String, Component>,
}

impl Contents {
    fn add(&mut self, member: &ListedMember<'_>, provenance: &Provenance) {
        let mut file = Component {
            kind: "file",
            bom_ref: format!("file:{}", member.name),
            name: member.name.to_owned(),
            hashes: vec![Hash { alg: "SHA-256", content: hex(&member.sha256) }],
            ..Component::default()
        };
        match provenance.origin(member.name) {
            Origin::Artifact { artifact, basedir, path, edit } => {
                file.properties.push(property("rocm-packager:basedir", basedir.as_ref()));
                // Most files keep their path from the basedir into the platform directory;
                // said only when it differs (a library under its SONAME, a link's target),
                // as a wheel of thousands of files would repeat every path.
                let inside = member.name.split_once('/').map(|(_, inside)| inside);
                if inside != Some(path.as_str()) {
                    file.properties.push(property("rocm-packager:path", path));
                }
                // A launcher is ours, whatever directory it replaces a link in.
                let third_party = match edit {
                    Edit::Launcher { .. } => Upstream::None,
                    _ => upstream(member.name, provenance.sources.as_deref()),
                };
                add_edit(&mut file.properties, edit);
                let group = self.artifacts.entry(artifact.to_string()).or_default();
                match third_party {
                    Upstream::None => group.files.push(file),
                    Upstream::Unknown(why) => {
                        file.properties.push(property("rocm-packager:upstream", why));
                        group.files.push(file);
                    }
                    Upstream::Project(project) => {
                        let component = project_component(&artifact, project);
                        group.projects.entry(component.bom_ref.clone()).or_insert(component).components.push(file);
                    }
                    Upstream::Llvm(version) => {
                        let source =
                            provenance.sources.as_deref().and_then(|sources| sources.llvm_version_source.as_deref());
                        let component = llvm_component(&artifact, version, source);
                        group.projects.entry(component.bom_ref.clone()).or_insert(component).components.push(file);
                    }
                }
            }
            Origin::Generated { artifacts } => {
                file.properties.push(property("rocm-packager:origin", "generated"));
                file.components = artifacts.iter().map(|name| artifact_component(name)).collect();
                self.generated.push(file);
            }
            Origin::Wheel { file_name, edit } => {
                add_edit(&mut file.properties, edit);
                self.wheels.entry(file_name).or_default().push(file);
            }
        }
    }

    /// Artifacts by name, then the wheels files came from, then the files made here; the
    /// members arrive in path order, and so do the files of each.
    fn into_components(self) -> Vec<Component> {
        let mut components = Vec::new();
        for (name, files) in self.artifacts {
            let mut component = artifact_component(&name);
            component.components = files.projects.into_values().collect();
            component.components.extend(files.files);
            components.push(component);
        }
        for (file_name, files) in self.wheels {
            components.push(Component {
                kind: "library",
                bom_ref: format!("wheel:{file_name}"),
                name: file_name,
                description: Some("the wheel these files were taken from".to_owned()),
                components: files,
                ..Component::default()
            });
        }
        components.extend(self.generated);
        components
    }
}

fn add_edit(properties: &mut Vec<Property>, edit: Edit) {
    match edit {
        Edit::None => {}
        Edit::Rpath => properties.push(property("rocm-packager:edit", "rpath")),
        Edit::Launcher { target } => {
            properties.push(property("rocm-packager:edit", "launcher"));
            properties.push(property("rocm-packager:launcher-target", target));
        }
        Edit::DeviceCodeRemoved => properties.push(property("rocm-packager:edit", "device-code-removed")),
        Edit::DeviceArchive { code_objects } => {
            properties.push(property("rocm-packager:edit", "device-archive"));
            for code_object in code_objects {
                properties.push(property("rocm-packager:code-object", code_object));
            }
        }
    }
}

/// A TheRock artifact (`blas_lib_gfx110X-all`): its three parts as properties.
fn artifact_component(dir_name: &str) -> Component {
    let mut component = Component {
        kind: "library",
        bom_ref: format!("artifact:{dir_name}"),
        name: dir_name.to_owned(),
        ..Component::default()
    };
    if let Some(name) = ArtifactName::parse(dir_name) {
        // What the artifact's files are for: `run` holds programs, `doc` and `dbg` data.
        component.kind = match name.component.as_str() {
            "run" | "test" => "application",
            "doc" | "dbg" => "data",
            _ => "library",
        };
        let family = name.target_family.to_string();
        component.description =
            Some(format!("TheRock artifact {}, component {}, target family {family}", name.name, name.component));
        component.properties = vec![
            property("therock:artifact:name", name.name),
            property("therock:artifact:component", name.component),
            property("therock:artifact:target-family", family),
        ];
    }
    component
}

/// A third-party project of the checkout's `third-party/sysdeps`, inside `artifact`.
fn project_component(artifact: &str, project: &SourceProject) -> Component {
    let directory = project.cmake.rsplit('/').nth(1).unwrap_or(&project.name);
    let hashes = project.hash.iter().map(|(alg, content)| Hash { alg, content: content.clone() }).collect();
    let mut properties = vec![property("therock:source", project.cmake.clone())];
    if project.version.is_none() {
        properties.push(property("rocm-packager:version", "unknown: its source archive's name gives none"));
    }
    Component {
        kind: "library",
        bom_ref: format!("third-party:{artifact}/{directory}"),
        name: project.name.clone(),
        version: project.version.clone(),
        purl: project.version.as_ref().map(|version| generic_purl(&project.name, version)),
        external_references: vec![ExternalReference { kind: "source-distribution", url: project.url.clone(), hashes }],
        properties,
        ..Component::default()
    }
}

/// LLVM as the checkout's `compiler/amd-llvm` builds it, inside `artifact`; its version
/// read from `source` (the checkout's LLVMVersion.cmake, or a file of the build when the
/// checkout lacks the LLVM source), said where it came from.
fn llvm_component(artifact: &str, version: &str, source: Option<&str>) -> Component {
    let (description, properties) = match source {
        Some(path) if path != LLVM_VERSION_CMAKE => (
            format!(
                "LLVM as ROCm builds it: the TheRock checkout's compiler/amd-llvm, which the checkout lacks; its \
                 version read from the build's {path}"
            ),
            vec![property("rocm-packager:version-from", format!("the build: {path}"))],
        ),
        _ => (
            "LLVM as ROCm builds it: the TheRock checkout's compiler/amd-llvm".to_owned(),
            vec![property("therock:source", LLVM_VERSION_CMAKE)],
        ),
    };
    Component {
        kind: "library",
        bom_ref: format!("third-party:{artifact}/llvm-project"),
        name: "llvm-project".to_owned(),
        version: Some(version.to_owned()),
        description: Some(description),
        properties,
        ..Component::default()
    }
}

/// One component per distribution the wheel requires, in the order first named: a
/// distribution required by several lines (one per extra, or per environment marker) is
/// one object, its bom-ref unique as CycloneDX wants, each line a property of it.
fn requirement_components(lines: &[String]) -> Vec<Component> {
    let mut components: Vec<Component> = Vec::new();
    for line in lines {
        let component = requirement_component(line);
        match components.iter_mut().find(|earlier| earlier.bom_ref == component.bom_ref) {
            Some(earlier) => earlier.properties.extend(component.properties),
            None => components.push(component),
        }
    }
    components
}

/// An SDK package the wheel requires (`Requires-Dist`), not part of it.
fn requirement_component(line: &str) -> Component {
    let requirement = parse_requirement(line);
    Component {
        kind: "library",
        bom_ref: format!("requirement:{}", archive_write::normalize(&requirement.name)),
        purl: Some(pypi_purl(&requirement.name, requirement.exact_version.as_deref(), None)),
        version: requirement.exact_version,
        name: requirement.name,
        scope: Some("required"),
        properties: vec![property("rocm-packager:requirement", line)],
        ..Component::default()
    }
}

fn hex(digest: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(digest.len() * 2);
    for byte in digest {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::Value;

    use super::*;
    use crate::input::third_party::ThirdPartySources;

    fn member(name: &str, byte: u8) -> ListedMember<'_> {
        ListedMember { name, sha256: [byte; 32], size: 1 }
    }

    fn provenance() -> Provenance {
        let numactl = SourceProject {
            cmake: "third-party/sysdeps/linux/numactl/CMakeLists.txt".into(),
            name: "numactl".into(),
            version: Some("2.0.19".into()),
            url: "https://mirror.example/numactl-2.0.19.tar.gz".into(),
            hash: Some(("SHA-256", "ab".repeat(32))),
            libraries: vec!["libnuma.so".into()],
        };
        let sources = ThirdPartySources { projects: vec![numactl], llvm_version: None, llvm_version_source: None };
        let mut provenance = Provenance::new(Some(Arc::new(sources)));
        let from = |artifact: &str, path: &str, edit: Edit| Origin::Artifact {
            artifact: Arc::from(artifact),
            basedir: Arc::from("stage"),
            path: path.to_owned(),
            edit,
        };
        provenance.insert("_x/lib/libx.so.1".into(), from("x_lib_generic", "lib/libx.so.1.2", Edit::Rpath));
        provenance.insert("_x/lib/liby.so".into(), from("x_lib_generic", "lib/liby.so", Edit::None));
        provenance
            .insert("_x/bin/tool".into(), from("x_run_generic", "bin/tool", Edit::Launcher { target: "../t".into() }));
        let numa = "lib/rocm_sysdeps/lib/librocm_sysdeps_numa.so.1";
        provenance.insert(format!("_x/{numa}"), from("sysdeps_lib_generic", numa, Edit::None));
        provenance
            .insert("_x/lib/llvm/bin/clang".into(), from("amd-llvm_run_generic", "lib/llvm/bin/clang", Edit::None));
        provenance.insert("x/_devel.tar".into(), Origin::Generated { artifacts: vec!["x_dev_generic".into()] });
        provenance
    }

    fn render_value(members: &[ListedMember<'_>], requirements: &[String]) -> (Vec<u8>, Value) {
        let wheel = WheelIdentity {
            name: "rocm-sdk-libraries-gfx110X-all".into(),
            version: "7.12.0.dev0".into(),
            file_name: "rocm_sdk_libraries_gfx110x_all-7.12.0.dev0-py3-none-linux_x86_64.whl".into(),
        };
        let bytes = render(&wheel, members, &provenance(), requirements);
        let value = serde_json::from_slice(&bytes).expect("JSON");
        (bytes, value)
    }

    /// Every component at any depth, by bom-ref.
    fn components(value: &Value) -> BTreeMap<String, Value> {
        let mut out = BTreeMap::new();
        let mut stack: Vec<&Value> = value["components"].as_array().expect("components").iter().collect();
        while let Some(component) = stack.pop() {
            out.insert(component["bom-ref"].as_str().expect("a bom-ref").to_owned(), component.clone());
            stack.extend(component["components"].as_array().into_iter().flatten());
        }
        out
    }

    #[test]
    fn files_sit_under_their_artifacts_and_projects() {
        let members = [
            member("_x/bin/tool", 1),
            member("_x/lib/libx.so.1", 2),
            member("_x/lib/liby.so", 8),
            member("_x/lib/llvm/bin/clang", 3),
            member("_x/lib/rocm_sysdeps/lib/librocm_sysdeps_numa.so.1", 4),
            member("x/__init__.py", 5),
            member("x/_devel.tar", 6),
            member("x-1.dist-info/METADATA", 7),
        ];
        let requirement = "rocm-sdk-core==7.12.0.dev0".to_owned();
        let (_, value) = render_value(&members, &[requirement]);
        let wheel_ref = "pkg:pypi/rocm-sdk-libraries-gfx110x-all@7.12.0.dev0?file_name=\
                         rocm_sdk_libraries_gfx110x_all-7.12.0.dev0-py3-none-linux_x86_64.whl";
        assert_eq!(value["metadata"]["component"]["purl"], wheel_ref);
        assert_eq!(value["metadata"]["component"]["name"], "rocm-sdk-libraries-gfx110X-all");
        let all = components(&value);
        let files: Vec<&String> = all.keys().filter(|key| key.starts_with("file:")).collect();
        assert_eq!(files.len(), 7, "every member but .dist-info: {files:?}");
        // The path in the artifact, where it is not the path in the platform directory.
        let libx = all["file:_x/lib/libx.so.1"]["properties"].to_string();
        assert!(libx.contains(r#"{"name":"rocm-packager:path","value":"lib/libx.so.1.2"}"#), "{libx}");
        assert!(!all["file:_x/lib/liby.so"]["properties"].to_string().contains("rocm-packager:path"));
        let numa_file = "file:_x/lib/rocm_sysdeps/lib/librocm_sysdeps_numa.so.1";
        let numactl = &all["third-party:sysdeps_lib_generic/numactl"];
        assert_eq!((&numactl["name"], &numactl["version"]), (&Value::from("numactl"), &Value::from("2.0.19")));
        assert_eq!(numactl["components"][0]["bom-ref"], numa_file);
        assert_eq!(numactl["externalReferences"][0]["hashes"][0]["content"], "ab".repeat(32));
        assert_eq!(all[numa_file]["hashes"][0], serde_json::json!({"alg": "SHA-256", "content": "04".repeat(32)}));
        let clang = &all["file:_x/lib/llvm/bin/clang"]["properties"];
        assert!(clang.to_string().contains(super::super::upstream::NO_LLVM_SOURCE), "{clang}");
        let tool = all["file:_x/bin/tool"]["properties"].to_string();
        assert!(tool.contains("launcher") && !tool.contains("upstream"), "{tool}");
        assert_eq!(all["file:x/_devel.tar"]["components"][0]["bom-ref"], "artifact:x_dev_generic");
        assert_eq!(all["artifact:x_run_generic"]["type"], "application");
        let requirement = &all["requirement:rocm-sdk-core"];
        assert_eq!(requirement["purl"], "pkg:pypi/rocm-sdk-core@7.12.0.dev0");
        let dependency = serde_json::json!([{"ref": wheel_ref, "dependsOn": ["requirement:rocm-sdk-core"]}]);
        assert_eq!(value["dependencies"], dependency);
    }

    #[test]
    fn a_distribution_required_by_several_lines_is_one_component() {
        let lines = [
            "torch-device-gfx11xx==1.0; extra == \"device-gfx1100\"".to_owned(),
            "numpy".to_owned(),
            "torch-device-gfx11xx==1.0; extra == \"device-gfx1101\"".to_owned(),
        ];
        let (_, value) = render_value(&[], &lines);
        let all = components(&value);
        let family = all["requirement:torch-device-gfx11xx"]["properties"].to_string();
        assert!(family.contains("device-gfx1100") && family.contains("device-gfx1101"), "{family}");
        let depends_on = &value["dependencies"][0]["dependsOn"];
        assert_eq!(depends_on, &serde_json::json!(["requirement:torch-device-gfx11xx", "requirement:numpy"]));
    }

    #[test]
    fn the_same_wheel_gives_the_same_bytes_and_another_another_serial() {
        let (first, value) = render_value(&[member("_x/lib/libx.so.1", 2)], &[]);
        let (again, _) = render_value(&[member("_x/lib/libx.so.1", 2)], &[]);
        assert_eq!(first, again);
        let (other, other_value) = render_value(&[member("_x/lib/libx.so.1", 3)], &[]);
        assert_ne!(first, other);
        assert_ne!(value["serialNumber"], other_value["serialNumber"]);
        assert!(first.ends_with(b"}\n") && !first[..first.len() - 1].contains(&b'\n'), "one line");
    }
}
