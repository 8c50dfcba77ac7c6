//! [`WheelFileName`]: `{distribution}-{version}(-{build})?-{python}-{abi}-{platform}(-{label})?.whl`
//! (PEP 427/491, and PEP 825's variant label), parsed and displayed in this one place.
//!
//! Hand-written: the one maintained parser on crates.io (`uv-distribution-filename`) is an
//! internal crate of uv with no stable API, needs rustc 1.95 (the workspace's floor is
//! 1.85) and brings 98 crates; this takes 60 lines.
//!
//! Owns: splitting and joining the parts. Does not own: what the parts must be for our
//! packages (`identity`), or how the writer spells the distribution (`archive-write`).

use std::fmt;

/// The parts of a wheel's file name, as the name spells them (the distribution in file-name
/// form: `rocm_sdk_core`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WheelFileName {
    pub distribution: String,
    pub version: String,
    pub build: Option<String>,
    pub python: String,
    pub abi: String,
    pub platform: String,
    /// A variant wheel's label (PEP 825, draft).
    pub variant: Option<String>,
}

impl WheelFileName {
    /// The parts of `file_name`; `None` when it is no wheel file name (another suffix, or
    /// not five to seven `-`-separated parts). Of six parts, the third is a build tag when
    /// it starts with a digit, else the python tag of a variant wheel (PEP 825 keeps python
    /// tags from starting with a digit so that the two readings never meet).
    pub fn parse(file_name: &str) -> Option<WheelFileName> {
        let stem = file_name.strip_suffix(".whl")?;
        let parts: Vec<&str> = stem.split('-').collect();
        let is_build = |part: &&str| part.starts_with(|c: char| c.is_ascii_digit());
        let (distribution, version, build, python, abi, platform, variant) = match parts.as_slice() {
            [distribution, version, python, abi, platform] => {
                (distribution, version, None, python, abi, platform, None)
            }
            [distribution, version, build, python, abi, platform] if is_build(build) => {
                (distribution, version, Some(*build), python, abi, platform, None)
            }
            [distribution, version, python, abi, platform, label] => {
                (distribution, version, None, python, abi, platform, Some(*label))
            }
            [distribution, version, build, python, abi, platform, label] if is_build(build) => {
                (distribution, version, Some(*build), python, abi, platform, Some(*label))
            }
            _ => return None,
        };
        Some(WheelFileName {
            distribution: (*distribution).to_owned(),
            version: (*version).to_owned(),
            build: build.map(str::to_owned),
            python: (*python).to_owned(),
            abi: (*abi).to_owned(),
            platform: (*platform).to_owned(),
            variant: variant.map(str::to_owned),
        })
    }

    /// Whether the wheel is for Windows (`win_amd64`, `win32`, `win_arm64`).
    pub fn is_windows(&self) -> bool {
        self.platform.starts_with("win")
    }
}

impl fmt::Display for WheelFileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.distribution, self.version)?;
        if let Some(build) = &self.build {
            write!(f, "-{build}")?;
        }
        write!(f, "-{}-{}-{}", self.python, self.abi, self.platform)?;
        if let Some(label) = &self.variant {
            write!(f, "-{label}")?;
        }
        f.write_str(".whl")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays_the_same_name() {
        for name in [
            "rocm_sdk_core-7.12.0.dev0-py3-none-linux_x86_64.whl",
            "rocm_sdk_core-7.12.0-1-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
            "rocm_sdk_device-7.12.0-py3-none-linux_x86_64-gfx90a.whl",
            "rocm_sdk_device-7.12.0-1-py3-none-linux_x86_64-gfx90a.whl",
        ] {
            let parsed = WheelFileName::parse(name).expect(name);
            assert_eq!(parsed.to_string(), name);
        }
        let parsed = WheelFileName::parse("rocm_sdk_core-7.0-py3-none-win_amd64.whl").expect("valid");
        assert_eq!((parsed.distribution.as_str(), parsed.version.as_str()), ("rocm_sdk_core", "7.0"));
        assert!(parsed.is_windows());
        let variant = WheelFileName::parse("rocm_sdk_device-7.0-py3-none-linux_x86_64-gfx1030.whl").expect("valid");
        assert_eq!((variant.build, variant.variant.as_deref()), (None, Some("gfx1030")));
        let built = WheelFileName::parse("rocm_sdk_core-7.0-2-py3-none-linux_x86_64.whl").expect("valid");
        assert_eq!((built.build.as_deref(), built.variant), (Some("2"), None));
        assert_eq!(WheelFileName::parse("rocm-7.0.tar.gz"), None);
        assert_eq!(WheelFileName::parse("a-1-py3-none.whl"), None);
    }
}
