//! Kernel database files that belong to one GPU target or family (SPEC §12 "Kernel
//! databases"): libraries ship precompiled kernels and tuning tables as plain files named
//! by the GPU they serve, and a split moves them into that GPU's device wheel with the
//! code objects. The shapes are those of the libraries PyTorch wheels carry:
//!
//! - rocBLAS, hipBLASLt and hipSPARSELt: files under a `library/` directory (`.co`,
//!   `.hsaco`, `.dat`) with the target in the name (`TensileLibrary_gfx942.co`,
//!   `Kernels.so-000-gfx90a-xnack-.hsaco`) or a directory named by it (`library/gfx942/`);
//! - AOTriton: `aotriton.images/amd-<target or family>/` (`amd-gfx942`, `amd-gfx11xx`);
//! - MIOpen: `*.kdb` kernel databases, whose names glue the target and a compute-unit
//!   count (`gfx90a68.kdb`, `gfx942130.kdb`), so the longest known processor is taken.
//!
//! Owns: recognising those files. Does not own: which wheel a key names (`grouping`).

use super::grouping::WheelKey;

/// Extensions of Tensile-style kernel files under `library/`.
const LIBRARY_EXTENSIONS: &[&str] = &["co", "hsaco", "dat"];

/// The device wheel a kernel database file at `path` (its site-packages path) belongs
/// to; None for every other file.
pub fn database_key(path: &str) -> Option<WheelKey> {
    let components: Vec<&str> = path.split('/').collect();
    let (file_name, directories) = components.split_last()?;
    if let Some(at) = directories.iter().position(|directory| *directory == "aotriton.images") {
        let family = directories.get(at + 1)?.strip_prefix("amd-")?;
        return key_of_name(family);
    }
    if let Some(at) = directories.iter().rposition(|directory| *directory == "library") {
        let extension = file_name.rsplit_once('.').map(|(_, extension)| extension)?;
        if !LIBRARY_EXTENSIONS.contains(&extension) {
            return None;
        }
        return gfx_tokens(file_name)
            .into_iter()
            .find_map(|token| key_of_name(&token))
            .or_else(|| directories[at + 1..].iter().find_map(|directory| key_of_name(directory)));
    }
    if file_name.ends_with(".kdb") {
        return kdb_key(file_name);
    }
    None
}

/// A target id (`gfx90a`, `gfx90a-xnack-` as Tensile spells `gfx90a:xnack-`, `gfx11-generic`)
/// or a family pattern (`gfx11xx`).
fn key_of_name(name: &str) -> Option<WheelKey> {
    let name = name.to_ascii_lowercase();
    let target_id = name.replace("-xnack", ":xnack").replace("-sramecc", ":sramecc");
    WheelKey::of_target_id(&target_id).or_else(|| WheelKey::of_pattern(&name))
}

/// The `gfx…` words of a file name, split at `_`, `.` and at a `-` that does not start a
/// feature (`-xnack±`, `-sramecc±`).
fn gfx_tokens(file_name: &str) -> Vec<String> {
    let lower = file_name.to_ascii_lowercase();
    let mut tokens = Vec::new();
    let mut rest = lower.as_str();
    while let Some(at) = rest.find("gfx") {
        let word = &rest[at..];
        let mut end = word.find(['_', '.', '-']).unwrap_or(word.len());
        while let Some(feature) =
            ["-xnack+", "-xnack-", "-sramecc+", "-sramecc-"].iter().find(|feature| word[end..].starts_with(**feature))
        {
            end += feature.len();
        }
        tokens.push(word[..end].to_owned());
        rest = &word[end.max(3)..];
    }
    tokens
}

/// MIOpen's `<target><compute units>.kdb`: the longest processor the name starts with.
fn kdb_key(file_name: &str) -> Option<WheelKey> {
    let stem = file_name.strip_suffix(".kdb")?.to_ascii_lowercase();
    let digits_end = stem.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(stem.len());
    (4..=digits_end)
        .rev()
        .filter_map(|end| stem.get(..end))
        .filter(|prefix| prefix.starts_with("gfx"))
        .find_map(|prefix| super::grouping::is_known_processor(prefix).then(|| key_of_name(prefix)).flatten())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(path: &str, expect: Option<&str>) {
        assert_eq!(database_key(path).map(|key| key.as_str().to_owned()).as_deref(), expect, "{path}");
    }

    #[test]
    fn tensile_files_are_named_by_target() {
        check("torch/lib/rocblas/library/TensileLibrary_Type_HH_Contraction_gfx942.co", Some("gfx942"));
        check("torch/lib/rocblas/library/Kernels.so-000-gfx90a-xnack-.hsaco", Some("gfx90a"));
        check("torch/lib/rocblas/library/TensileLibrary_gfx1100.dat", Some("gfx1100"));
        check("torch/lib/hipblaslt/library/gfx942/extop.co", Some("gfx942"));
        check("torch/lib/hipblaslt/library/TensileManifest.txt", None);
        check("torch/lib/rocblas/library/TensileLibrary_fallback.dat", None);
        check("torch/lib/libtorch_gfx942_notes.co", None);
    }

    #[test]
    fn aotriton_directories_name_a_target_or_a_family() {
        check("torch/lib/aotriton.images/amd-gfx942/flash/attn_fwd.aks2", Some("gfx942"));
        check("torch/lib/aotriton.images/amd-gfx11xx/flash/attn_fwd.aks2", Some("gfx11xx"));
        check("torch/lib/aotriton.images/amd-gfx120x/x.aks2", Some("gfx120x"));
        check("torch/lib/aotriton.images/README", None);
    }

    #[test]
    fn miopen_databases_glue_target_and_compute_units() {
        check("torch/share/miopen/db/gfx90a68.kdb", Some("gfx90a"));
        check("torch/share/miopen/db/gfx942130.kdb", Some("gfx942"));
        check("torch/share/miopen/db/gfx1030_36.kdb", Some("gfx1030"));
        check("torch/share/miopen/db/gfx1151.kdb", Some("gfx1151"));
        check("torch/share/miopen/db/tuning.kdb", None);
    }

    #[test]
    fn tokens_keep_tensile_feature_suffixes() {
        assert_eq!(gfx_tokens("Kernels.so-000-gfx90a-xnack-.hsaco"), ["gfx90a-xnack-"]);
        assert_eq!(gfx_tokens("a_gfx1100_gfx1101.co"), ["gfx1100", "gfx1101"]);
    }
}
