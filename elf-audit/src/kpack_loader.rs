//! Whether a HIP runtime can load device code from kpack archives (CONTRACT §12 "What a
//! split SDK needs"): a runtime built with `ROCM_KPACK_ENABLED` carries rocm-kpack's loader,
//! linked in (it defines the loader's entry points) or loaded (it imports them, or needs
//! `librocm_kpack.so`). A runtime without it hands every `HIPK` wrapper back as
//! `hipErrorInvalidImage`. Read from the file's own dynamic tables, so the packager and
//! the gate ask the same question of the same bytes, each reading them itself.
//!
//! Owns: that rule and the names it looks for. Must not know: packages, where a runtime
//! is installed, what a missing loader means to a release.

use crate::DynamicSymbols;

/// rocm-kpack's loader entry points (`kpack_api.h`): CLR calls `kpack_load_code_object`
/// for a `HIPK` wrapper; `kpack_open` and `kpack_get_kernel` are the archive API it is
/// built on.
pub const KPACK_LOADER_SYMBOLS: [&str; 3] = ["kpack_load_code_object", "kpack_open", "kpack_get_kernel"];

/// rocm-kpack's runtime library, as TheRock's `core-kpack` artifact ships it
/// (`librocm_kpack.so.1`).
pub const KPACK_LIBRARY: &str = "librocm_kpack.so";

/// The HIP runtime's file name and SONAME stem (`libamdhip64.so.7`).
pub const HIP_RUNTIME: &str = "libamdhip64.so";

/// Whether `name` (a SONAME or file name) is the HIP runtime's: `libamdhip64.so`,
/// `libamdhip64.so.7`, `libamdhip64.so.7.1.0`.
pub fn is_hip_runtime(name: &str) -> bool {
    name == HIP_RUNTIME || name.strip_prefix(HIP_RUNTIME).is_some_and(|rest| rest.starts_with('.'))
}

/// What shows that a runtime carries the kpack loader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KpackLoader {
    /// It defines a loader entry point: linked in.
    Defines(&'static str),
    /// It imports one: loaded from a library it needs.
    Imports(&'static str),
    /// It needs rocm-kpack's library.
    Needs(String),
}

impl std::fmt::Display for KpackLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KpackLoader::Defines(name) => write!(f, "defines `{name}`"),
            KpackLoader::Imports(name) => write!(f, "imports `{name}`"),
            KpackLoader::Needs(library) => write!(f, "needs `{library}`"),
        }
    }
}

/// The first sign of the kpack loader in a file with these dynamic symbols and DT_NEEDED
/// entries, or `None` when it has none (a runtime that cannot load archives).
pub fn kpack_loader(symbols: &DynamicSymbols, needed: &[String]) -> Option<KpackLoader> {
    if let Some(library) = needed.iter().find(|name| {
        name.as_str() == KPACK_LIBRARY || name.strip_prefix(KPACK_LIBRARY).is_some_and(|rest| rest.starts_with('.'))
    }) {
        return Some(KpackLoader::Needs(library.clone()));
    }
    for name in KPACK_LOADER_SYMBOLS {
        if symbols.exports.binds(name, None) {
            return Some(KpackLoader::Defines(name));
        }
    }
    KPACK_LOADER_SYMBOLS
        .into_iter()
        .find(|name| symbols.imports.iter().any(|import| import.name == *name))
        .map(KpackLoader::Imports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Import;

    #[test]
    fn names_of_the_runtime() {
        for name in ["libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.7.1.0"] {
            assert!(is_hip_runtime(name), "{name}");
        }
        for name in ["libamdhip64.so7", "libamdhip64_static.so", "libhiprtc.so.7"] {
            assert!(!is_hip_runtime(name), "{name}");
        }
    }

    #[test]
    fn each_sign_of_the_loader() {
        let mut symbols = DynamicSymbols::default();
        assert_eq!(kpack_loader(&symbols, &["libhsa-runtime64.so.1".to_owned()]), None);
        assert_eq!(
            kpack_loader(&symbols, &["librocm_kpack.so.1".to_owned()]),
            Some(KpackLoader::Needs("librocm_kpack.so.1".to_owned()))
        );
        assert_eq!(kpack_loader(&symbols, &["librocm_kpack.so_x".to_owned()]), None);
        symbols.imports.push(Import { name: "kpack_open".to_owned(), weak: false, version: None });
        assert_eq!(kpack_loader(&symbols, &[]), Some(KpackLoader::Imports("kpack_open")));
        symbols.exports.define("kpack_load_code_object", None, false);
        assert_eq!(kpack_loader(&symbols, &[]), Some(KpackLoader::Defines("kpack_load_code_object")));
        assert_eq!(KpackLoader::Defines("kpack_load_code_object").to_string(), "defines `kpack_load_code_object`");
    }
}
