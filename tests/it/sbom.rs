//! Bills of materials (SPEC §10): every wheel of the examples carries one that the
//! CycloneDX project's own validator (`cyclonedx-python-lib`, from PyPI in the tools
//! venv, with the official 1.6 schema it bundles) accepts, and that the gate finds
//! complete; the gate's own CycloneDX reader agrees with that validator on valid and
//! broken documents; a hand-broken document fails `verify --dist`; the same input gives
//! the same bytes; `--no-sbom` leaves it out; a TheRock checkout names the third-party
//! sources. (Installed with pip and uv: `install`.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use packager::config::{OutputMode, Sbom};
use release_gate::{verify_dist, Check};
use serde_json::{json, Value};

use crate::support;
use crate::targets::{build, file_name, wheel_members, wheels, VERSION};

/// Where in `.dist-info` the document lies.
pub const SBOM_LEAF: &str = "sboms/rocm-packager.cdx.json";

/// The document of every wheel in `dist`, by wheel file name; every wheel has one.
pub fn sboms(dist: &Path) -> BTreeMap<String, Vec<u8>> {
    let wheels = wheels(dist);
    assert!(!wheels.is_empty(), "no wheel in {}", dist.display());
    wheels
        .iter()
        .map(|wheel| {
            let members = wheel_members(wheel);
            let (_, bytes) = members
                .into_iter()
                .find(|(name, _)| name.ends_with(&format!(".dist-info/{SBOM_LEAF}")))
                .unwrap_or_else(|| panic!("{} has no {SBOM_LEAF}", wheel.display()));
            (file_name(wheel), bytes)
        })
        .collect()
}

/// Validates every file named on the command line with cyclonedx-python-lib's JSON
/// validator for CycloneDX 1.6, and prints, as JSON, each path with `null` or the first
/// line of the first error.
const VALIDATE: &str = "import json, sys\n\
    from cyclonedx.schema import SchemaVersion\n\
    from cyclonedx.validation.json import JsonValidator\n\
    validator = JsonValidator(SchemaVersion.V1_6)\n\
    verdicts = {}\n\
    for path in sys.argv[1:]:\n\
    \x20   with open(path, encoding='utf-8') as handle:\n\
    \x20       error = validator.validate_str(handle.read())\n\
    \x20   verdicts[path] = None if error is None else str(error).splitlines()[0]\n\
    print(json.dumps(verdicts))\n";

/// What the CycloneDX project's validator says of each document, by name: `None` when it
/// is valid, else its first error.
fn official_verdicts(documents: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Option<String>> {
    let scratch = tempfile::tempdir().expect("tempdir");
    let mut paths: BTreeMap<String, String> = BTreeMap::new();
    for (index, (name, bytes)) in documents.iter().enumerate() {
        let path = scratch.path().join(format!("{index}.cdx.json"));
        fs_err::write(&path, bytes).expect("write document");
        paths.insert(path.to_string_lossy().into_owned(), name.clone());
    }
    let python = support::tools_venv().join("bin/python");
    let stdout = support::run(Command::new(python).arg("-c").arg(VALIDATE).args(paths.keys()));
    let verdicts: BTreeMap<String, Option<String>> = serde_json::from_str(&stdout).expect("JSON verdicts");
    assert_eq!(verdicts.len(), documents.len(), "{stdout}");
    verdicts.into_iter().map(|(path, verdict)| (paths[&path].clone(), verdict)).collect()
}

/// Every wheel of `dist` carries a document that the CycloneDX project's validator and the
/// gate's reader both accept, and that `verify --dist` finds complete and true.
pub fn assert_valid_sboms(dist: &Path) {
    let documents = sboms(dist);
    for (wheel, verdict) in official_verdicts(&documents) {
        assert_eq!(verdict, None, "cyclonedx-python-lib refuses the document of {wheel}");
    }
    for (wheel, bytes) in &documents {
        let findings = release_gate::cyclonedx_findings(std::str::from_utf8(bytes).expect("UTF-8"));
        assert_eq!(findings, release_gate::CycloneDxFindings::default(), "{wheel}");
    }
    let report = verify_dist(dist).expect("verify");
    let sbom_findings: Vec<_> =
        report.violations().chain(report.warnings()).filter(|finding| finding.check == Check::Sbom).collect();
    assert!(sbom_findings.is_empty(), "{sbom_findings:#?}");
}

/// Every component at any depth of a document, by bom-ref.
fn components(document: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let mut stack: Vec<&Value> = document["components"].as_array().expect("components").iter().collect();
    while let Some(component) = stack.pop() {
        out.insert(component["bom-ref"].as_str().expect("bom-ref").to_owned(), component.clone());
        stack.extend(component["components"].as_array().into_iter().flatten());
    }
    out
}

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("a JSON document")
}

#[test]
fn every_wheel_of_the_linux_examples_carries_a_valid_complete_sbom() {
    let legacy = build(false);
    assert_valid_sboms(&legacy.dist);
    let documents = sboms(&legacy.dist);
    let libraries = parse(&documents[&format!("rocm_sdk_libraries_gfx110x_all-{VERSION}-py3-none-linux_x86_64.whl")]);
    let component = &libraries["metadata"]["component"];
    // METADATA's Name keeps TheRock's spelling; the purl names the normalised PyPI name.
    assert_eq!(component["name"], "rocm-sdk-libraries-gfx110X-all");
    assert_eq!(
        component["purl"],
        format!(
            "pkg:pypi/rocm-sdk-libraries-gfx110x-all@{VERSION}?file_name=rocm_sdk_libraries_gfx110x_all-{VERSION}-py3-none-linux_x86_64.whl"
        )
    );
    let all = components(&libraries);
    let rocblas = &all["file:_rocm_sdk_libraries_gfx110X_all/lib/librocblas.so.5"];
    let properties = rocblas["properties"].to_string();
    assert!(properties.contains("\"rpath\"") && properties.contains("math-libs/BLAS/rocBLAS/stage"), "{properties}");
    let artifact = &all["artifact:blas_lib_gfx110X-all"];
    assert!(artifact["components"].as_array().expect("files").contains(rocblas), "{artifact}");

    let kpack_split = build(true);
    assert_valid_sboms(&kpack_split.dist);
    let device =
        parse(&sboms(&kpack_split.dist)[&format!("rocm_sdk_device_gfx1030-{VERSION}-py3-none-linux_x86_64.whl")]);
    let all = components(&device);
    let requirement = &all["requirement:rocm-sdk-libraries"];
    assert_eq!(requirement["scope"], "required");
    let wheel_ref = device["metadata"]["component"]["bom-ref"].clone();
    assert_eq!(device["dependencies"], json!([{"ref": wheel_ref, "dependsOn": ["requirement:rocm-sdk-libraries"]}]));
    let artifacts: Vec<&String> = all.keys().filter(|key| key.starts_with("artifact:")).collect();
    assert!(!artifacts.is_empty() && artifacts.iter().all(|key| key.ends_with("_gfx1030")), "{artifacts:?}");
}

/// A valid document and its broken copies: the schema breaks, which both readers refuse,
/// and the breaks of the rules a schema cannot say, which the official validator accepts
/// and the gate refuses. Both readers are run on every one.
#[test]
fn the_gate_reads_cyclonedx_as_the_official_validator_does() {
    let legacy = build(false);
    let mut base = parse(&sboms(&legacy.dist)[&format!("rocm_sdk_core-{VERSION}-py3-none-linux_x86_64.whl")]);
    // Our documents give no external reference without a checkout: one is added, as a
    // checkout's third-party projects carry them.
    base["components"][0]["externalReferences"] = json!([{"type": "source-distribution", "url": "https://mirror.example/xz-5.8.1.tar.bz2",
                "hashes": [{"alg": "SHA-512", "content": "ab".repeat(64)}]}]);
    let first_file = "/components/0/components/0";
    // Sets `pointer` to `value`: an array item that is there, or an object's key, added.
    let edit = |pointer: &str, value: Value| {
        let mut document = base.clone();
        let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
        match document.pointer_mut(parent).unwrap_or_else(|| panic!("{parent} in the document")) {
            Value::Array(items) => items[key.parse::<usize>().expect("an index")] = value,
            Value::Object(object) => drop(object.insert(key.to_owned(), value)),
            other => panic!("{parent} is {other}"),
        }
        document
    };
    let remove = |pointer: &str| {
        let mut document = base.clone();
        let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
        document.pointer_mut(parent).and_then(Value::as_object_mut).expect("an object").remove(key).expect(pointer);
        document
    };
    let tool_ref = base["metadata"]["tools"]["components"][0]["bom-ref"].clone();
    let mut duplicated = base.clone();
    let first = duplicated["components"][0].clone();
    duplicated["components"].as_array_mut().expect("components").push(first);
    let valid: Vec<(&str, Value)> = vec![
        ("as written, with an external reference", base.clone()),
        ("version 1.0, an integer to the schema", edit("/version", json!(1.0))),
    ];
    let schema_breaks: Vec<(&str, Value)> = vec![
        ("no bomFormat", remove("/bomFormat")),
        ("bomFormat not CycloneDX", edit("/bomFormat", json!("CycloneDx"))),
        ("specVersion a number", edit("/specVersion", json!(1.6))),
        ("serialNumber upper case", edit("/serialNumber", json!("urn:uuid:3E671687-395B-41F5-A30F-A58921A69B79"))),
        ("version 0", edit("/version", json!(0))),
        ("version a string", edit("/version", json!("1"))),
        ("an unknown top-level field", edit("/x", json!(1))),
        ("a component without a name", remove("/components/0/name")),
        ("a component of no type the schema knows", edit("/components/0/type", json!("binary"))),
        (
            "a component field the schema does not know",
            edit(first_file, json!({"type": "file", "name": "f", "size": 1})),
        ),
        ("a hash algorithm spelled wrong", edit(&format!("{first_file}/hashes/0/alg"), json!("SHA256"))),
        ("a hash of 3 digits", edit(&format!("{first_file}/hashes/0/content"), json!("abc"))),
        (
            "a hash with a field too many",
            edit(&format!("{first_file}/hashes/0"), json!({"alg": "SHA-256", "content": "00".repeat(32), "note": "x"})),
        ),
        ("a property without a name", edit("/components/0/properties/0", json!({"value": "x"}))),
        ("a property value that is a number", edit("/components/0/properties/0/value", json!(3))),
        ("an external reference of no known type", edit("/components/0/externalReferences/0/type", json!("download"))),
        ("an external reference that is no IRI", edit("/components/0/externalReferences/0/url", json!("not a url"))),
        ("a dependency without ref", edit("/dependencies/0", json!({"dependsOn": []}))),
        ("dependsOn naming one ref twice", edit("/dependencies/0/dependsOn", json!([tool_ref.clone(), tool_ref]))),
        ("one component twice", duplicated),
        ("a metadata field the schema does not know", edit("/metadata/x", json!(1))),
        (
            "a lifecycle field the schema does not know",
            edit("/metadata/lifecycles/0", json!({"phase": "build", "x": 1})),
        ),
        ("tools a string", edit("/metadata/tools", json!("rocm-packager"))),
        ("a lifecycle phase of no known name", edit("/metadata/lifecycles/0/phase", json!("compile"))),
        ("purl null", edit("/metadata/component/purl", Value::Null)),
        ("a version of 1025 characters", edit("/metadata/component/version", json!("1".repeat(1025)))),
        ("a scope of no known name", edit("/components/0/scope", json!("mandatory"))),
        ("a nested component without a type", remove(&format!("{first_file}/type"))),
        ("components an object", edit("/components", json!({}))),
    ];
    let other_ref = base["components"][1]["bom-ref"].clone();
    let rule_breaks: Vec<(&str, Value)> = vec![
        ("a bom-ref given twice", edit("/components/0/bom-ref", other_ref)),
        ("a dependency on nothing", edit("/dependencies/0/dependsOn", json!(["nothing"]))),
        ("a purl without its scheme", edit("/metadata/component/purl", json!("pypi/rocm-sdk-core"))),
        ("specVersion 1.5", edit("/specVersion", json!("1.5"))),
    ];
    let documents: BTreeMap<String, Vec<u8>> = valid
        .iter()
        .chain(&schema_breaks)
        .chain(&rule_breaks)
        .map(|(name, document)| ((*name).to_owned(), document.to_string().into_bytes()))
        .collect();
    assert_eq!(documents.len(), valid.len() + schema_breaks.len() + rule_breaks.len(), "names are unique");
    let official = official_verdicts(&documents);
    let gate = |name: &str| release_gate::cyclonedx_findings(std::str::from_utf8(&documents[name]).expect("UTF-8"));
    for (name, _) in &valid {
        assert_eq!((official[*name].as_deref(), gate(name)), (None, Default::default()), "{name}");
    }
    for (name, _) in &schema_breaks {
        assert!(official[*name].is_some(), "the official validator accepts {name}");
        assert!(!gate(name).schema.is_empty(), "the gate accepts {name}: {:?}", gate(name));
    }
    for (name, _) in &rule_breaks {
        assert_eq!(official[*name], None, "the official validator refuses {name}");
        let findings = gate(name);
        assert!(findings.schema.is_empty() && !findings.rules.is_empty(), "{name}: {findings:?}");
    }
}

/// A copy of the legacy example's dist in a temp dir.
fn copy_of_legacy_dist(temp: &Path) -> PathBuf {
    let dist = temp.join("dist");
    fs_err::create_dir(&dist).expect("mkdir");
    for entry in fs_err::read_dir(&build(false).dist).expect("read dist") {
        let path = entry.expect("entry").path();
        fs_err::copy(&path, dist.join(file_name(&path))).expect("copy");
    }
    dist
}

/// Rewrites the document of `wheel` with `edit` (RECORD following it).
fn break_sbom(wheel: &Path, edit: impl FnOnce(&mut Value)) {
    support::rewrite_wheel(wheel, |members| {
        let (_, bytes, _) =
            members.iter_mut().find(|(name, _, _)| name.ends_with(SBOM_LEAF)).expect("a bill of materials");
        let mut document = parse(bytes);
        edit(&mut document);
        *bytes = document.to_string().into_bytes();
    });
}

#[test]
fn a_hand_broken_sbom_fails_the_gate() {
    let temp = tempfile::tempdir().expect("tempdir");
    let dist = copy_of_legacy_dist(temp.path());
    let core = dist.join(format!("rocm_sdk_core-{VERSION}-py3-none-linux_x86_64.whl"));
    let profiler = dist.join(format!("rocm_profiler-{VERSION}-py3-none-linux_x86_64.whl"));
    let missing = "_rocm_sdk_core/bin/rocminfo";
    break_sbom(&core, |document| {
        let mut stack = vec![document.get_mut("components").expect("components")];
        while let Some(Value::Array(components)) = stack.pop() {
            components.retain(|component| component["name"] != missing);
            stack.extend(components.iter_mut().filter_map(|component| component.get_mut("components")));
        }
    });
    let mut wrong = String::new();
    break_sbom(&profiler, |document| {
        let file = &mut document["components"][0]["components"][0];
        wrong = file["name"].as_str().expect("a file name").to_owned();
        file["hashes"][0]["content"] = json!("0".repeat(64));
    });
    let report = verify_dist(&dist).expect("verify");
    let found: Vec<(String, Option<String>, Check)> =
        report.violations().map(|finding| (finding.file.clone(), finding.path.clone(), finding.check)).collect();
    let sbom = |wheel: &str| Some(format!("{wheel}-{VERSION}.dist-info/{SBOM_LEAF}"));
    assert_eq!(
        found,
        [
            (file_name(&profiler), sbom("rocm_profiler"), Check::Sbom),
            (file_name(&core), sbom("rocm_sdk_core"), Check::Sbom)
        ],
        "{report:#?}"
    );
    let messages: Vec<&str> = report.violations().map(|finding| finding.message.as_str()).collect();
    let wrong_digest = format!("gives {wrong} the SHA-256 {}, but the file's is ", "0".repeat(64));
    assert!(messages[0].starts_with(&wrong_digest), "{messages:?}");
    assert_eq!(messages[1], format!("does not list {missing}, a file of the wheel"));
}

/// The wheels whose documents differ between two dists.
fn differing(first: &BTreeMap<String, Vec<u8>>, second: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> = first.keys().chain(second.keys()).collect();
    names.into_iter().filter(|name| first.get(*name) != second.get(*name)).cloned().collect()
}

#[test]
fn the_same_input_gives_the_same_sbom_and_a_rerun_keeps_the_wheels() {
    let legacy = build(false);
    let temp = tempfile::tempdir().expect("tempdir");
    let config = support::package_config(&legacy.artifacts, &temp.path().join("again"));
    packager::package(&config, &packager::Silent).expect("package");
    let dist = config.output_dir();
    assert_eq!(differing(&sboms(&dist), &sboms(&legacy.dist)), Vec::<String>::new(), "a second run, other bytes");

    // Packaging again into the same place: every payload member is copied, only the
    // document and RECORD are made anew, and they come out as they were, so every wheel
    // is left as it was (SPEC §8).
    let before: BTreeMap<String, Vec<u8>> =
        wheels(&dist).iter().map(|wheel| (file_name(wheel), fs_err::read(wheel).expect("read"))).collect();
    let report = packager::package(&config, &packager::Silent).expect("package again");
    for output in report.outputs.iter().filter(|output| output.file_name.ends_with(".whl")) {
        assert_eq!(output.reuse.compressed_members, 2, "{}: {:?}", output.file_name, output.reuse);
    }
    for wheel in wheels(&dist) {
        assert!(fs_err::read(&wheel).expect("read") == before[&file_name(&wheel)], "{} changed", wheel.display());
    }

    // No clock in the document: another SOURCE_DATE_EPOCH changes no byte of it (the devel
    // tarball's digest follows its entries' times, so core is compared).
    let mut later = support::package_config(&legacy.artifacts, &temp.path().join("later"));
    later.build_time = packager::BuildTime(1_760_000_000);
    later.only = vec![packager::config::PackageGroup::Core];
    packager::package(&later, &packager::Silent).expect("package later");
    let core = format!("rocm_sdk_core-{VERSION}-py3-none-linux_x86_64.whl");
    assert!(sboms(&later.output_dir())[&core] == sboms(&legacy.dist)[&core], "the time changed core's document");
}

#[test]
fn no_sbom_leaves_it_out_and_the_gate_warns() {
    let legacy = build(false);
    let temp = tempfile::tempdir().expect("tempdir");
    let mut config = support::package_config(&legacy.artifacts, temp.path());
    config.sbom = Sbom::Omit;
    packager::package(&config, &packager::Silent).expect("package");
    let dist = config.output_dir();
    for wheel in wheels(&dist) {
        let names: Vec<String> = wheel_members(&wheel).into_keys().filter(|name| name.contains("/sboms/")).collect();
        assert!(names.is_empty(), "{}: {names:?}", wheel.display());
    }
    let report = verify_dist(&dist).expect("verify");
    assert_eq!(report.n_violations(), 0, "{report:#?}");
    let warned: Vec<&str> =
        report.warnings().filter(|warning| warning.check == Check::Sbom).map(|warning| warning.file.as_str()).collect();
    assert_eq!(warned.len(), wheels(&dist).len(), "one warning per wheel: {warned:?}");
    // Trees (`--no-build-packages`) hold exactly what the wheel would: the document too.
    let mut trees = support::package_config(&legacy.artifacts, &temp.path().join("trees"));
    trees.output = OutputMode::Trees;
    packager::package(&trees, &packager::Silent).expect("package trees");
    let tree_sbom =
        temp.path().join(format!("trees/rocm_sdk_core-{VERSION}/rocm_sdk_core-{VERSION}.dist-info/{SBOM_LEAF}"));
    let document = parse(&fs_err::read(tree_sbom).expect("the tree's document"));
    assert_eq!(document["specVersion"], "1.6");
}

/// A checkout shaped like TheRock's, with only what the packager reads of it: the
/// version, the target table, one third-party project and LLVM's version.
fn write_checkout(root: &Path) {
    let files = [
        ("version.json", "{\"rocm-version\": \"7.12.0\"}\n".to_owned()),
        ("cmake/therock_amdgpu_targets.cmake", String::new()),
        (
            "third-party/sysdeps/common/liblzma/CMakeLists.txt",
            "if(NOT CMAKE_SOURCE_DIR STREQUAL CMAKE_CURRENT_SOURCE_DIR)\n\
             \x20   # Originally mirrored from: https://github.com/tukaani-project/xz/releases/download/v5.8.1/xz-5.8.1.tar.bz2\n\
             \x20   set(_xz_url \"https://mirror.example/xz-5.8.1.tar.bz2\")\n\
             \x20   therock_subproject_fetch(therock-liblzma-sources\n\
             \x20     URL \"${_xz_url}\"\n\
             \x20     URL_HASH SHA256=5965c692c4c8800cd4b33ce6d0f6ac9ac9d6ab227b17c512b6561bce4f08d47e\n\
             \x20   )\n\
             \x20   therock_test_validate_shared_lib(\n\
             \x20     PATH build/dist/lib/rocm_sysdeps/lib\n\
             \x20     LIB_NAMES liblzma.so\n\
             \x20   )\n\
             endif()\n"
                .to_owned(),
        ),
        (
            "compiler/amd-llvm/cmake/Modules/LLVMVersion.cmake",
            "if(NOT DEFINED LLVM_VERSION_MAJOR)\n  set(LLVM_VERSION_MAJOR 22)\nendif()\n\
             set(LLVM_VERSION_MINOR 0)\nset(LLVM_VERSION_PATCH 0)\nset(LLVM_VERSION_SUFFIX git)\n"
                .to_owned(),
        ),
    ];
    for (path, text) in files {
        let path = root.join(path);
        fs_err::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        fs_err::write(path, text).expect("write");
    }
}

#[test]
fn a_checkout_names_the_third_party_sources_and_without_one_nothing_is_guessed() {
    let legacy = build(false);
    let temp = tempfile::tempdir().expect("tempdir");
    let checkout = temp.path().join("TheRock");
    write_checkout(&checkout);
    let mut config = support::package_config(&legacy.artifacts, &temp.path().join("out"));
    config.sbom = Sbom::Write { checkout: Some(checkout) };
    config.only = vec![packager::config::PackageGroup::Core];
    packager::package(&config, &packager::Silent).expect("package");
    let core = format!("rocm_sdk_core-{VERSION}-py3-none-linux_x86_64.whl");
    let with = parse(&sboms(&config.output_dir())[&core]);
    let without = parse(&sboms(&legacy.dist)[&core]);
    assert_eq!(official_verdicts(&BTreeMap::from([(core.clone(), with.to_string().into_bytes())]))[&core], None);

    let lzma = "file:_rocm_sdk_core/lib/rocm_sysdeps/lib/librocm_sysdeps_liblzma.so.5";
    let all = components(&with);
    let xz = &all["third-party:sysdeps_lib_generic/liblzma"];
    assert_eq!(
        (&xz["name"], &xz["version"], &xz["purl"]),
        (&json!("xz"), &json!("5.8.1"), &json!("pkg:generic/xz@5.8.1"))
    );
    assert_eq!(
        xz["externalReferences"],
        json!([{"type": "source-distribution", "url": "https://mirror.example/xz-5.8.1.tar.bz2",
                "hashes": [{"alg": "SHA-256", "content": "5965c692c4c8800cd4b33ce6d0f6ac9ac9d6ab227b17c512b6561bce4f08d47e"}]}])
    );
    assert!(xz["components"].as_array().expect("files").iter().any(|file| file["bom-ref"] == lzma), "{xz}");
    let llvm: Vec<&Value> =
        all.iter().filter(|(key, _)| key.ends_with("/llvm-project")).map(|(_, llvm)| llvm).collect();
    assert!(!llvm.is_empty() && llvm.iter().all(|llvm| llvm["version"] == "22.0.0git"), "{llvm:?}");
    assert!(llvm.iter().any(|llvm| llvm["components"].to_string().contains("lib/llvm/lib/libLLVM.so.22.0git")));

    // Without the checkout: the same file, under its artifact, with no project or version.
    let all = components(&without);
    assert!(!all.keys().any(|key| key.starts_with("third-party:")), "nothing guessed");
    let properties = all[lzma]["properties"].to_string();
    assert!(
        properties.contains("rocm-packager:upstream") && properties.contains("no TheRock checkout"),
        "{properties}"
    );
    assert!(without["metadata"]["properties"].to_string().contains("without a TheRock checkout"));
}

/// A checkout without the LLVM source (TheRock's `compiler/amd-llvm` submodule not checked
/// out): LLVM's version is the build's own, from its LLVM library's SONAME
/// (`libLLVM.so.22.0git`), and the document says where it was read.
#[test]
fn a_checkout_without_the_llvm_source_takes_llvms_version_from_the_build() {
    let legacy = build(false);
    let temp = tempfile::tempdir().expect("tempdir");
    let checkout = temp.path().join("TheRock");
    write_checkout(&checkout);
    fs_err::remove_file(checkout.join("compiler/amd-llvm/cmake/Modules/LLVMVersion.cmake")).expect("rm");
    let mut config = support::package_config(&legacy.artifacts, &temp.path().join("out"));
    config.sbom = Sbom::Write { checkout: Some(checkout) };
    config.only = vec![packager::config::PackageGroup::Core];
    packager::package(&config, &packager::Silent).expect("package");
    let core = format!("rocm_sdk_core-{VERSION}-py3-none-linux_x86_64.whl");
    let document = parse(&sboms(&config.output_dir())[&core]);
    assert_eq!(official_verdicts(&BTreeMap::from([(core.clone(), document.to_string().into_bytes())]))[&core], None);
    let all = components(&document);
    let llvm: Vec<&Value> =
        all.iter().filter(|(key, _)| key.ends_with("/llvm-project")).map(|(_, llvm)| llvm).collect();
    assert!(!llvm.is_empty(), "{}", document);
    for llvm in &llvm {
        assert_eq!(llvm["version"], "22.0git", "{llvm}");
        assert_eq!(
            llvm["properties"],
            json!([{"name": "rocm-packager:version-from", "value": "the build: lib/llvm/lib/libLLVM.so.22.0git"}])
        );
    }
    assert!(!document.to_string().contains("no LLVMVersion.cmake"), "no file is left unknown for it");
}
