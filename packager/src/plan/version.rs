//! PEP 440 version checks: every package of a build shares one version, and a bad one is
//! refused before anything is written.

/// Checks `version` against the public PEP 440 grammar (plus an optional `+local` part).
/// Returns the reason when it is not valid.
pub fn check_pep440(version: &str) -> Result<(), String> {
    let (public, local) = match version.split_once('+') {
        Some((public, local)) => (public, Some(local)),
        None => (version, None),
    };
    if let Some(local) = local {
        let ok = !local.is_empty()
            && local.split('.').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric()));
        if !ok {
            return Err(format!("local part {local:?} must be dot-separated letters and digits"));
        }
    }
    let mut rest = public;
    if let Some((epoch, after)) = rest.split_once('!') {
        if epoch.is_empty() || !epoch.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("epoch {epoch:?} must be a number"));
        }
        rest = after;
    }
    let release_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let release = rest[..release_end].trim_end_matches('.');
    let release_end = release.len();
    if release.is_empty() || release.split('.').any(str::is_empty) {
        return Err("it must start with a release number such as 7.12.0".to_owned());
    }
    let mut suffix = &rest[release_end..];
    for (labels, name) in
        [(&["a", "b", "rc"][..], "pre-release"), (&[".post"][..], "post-release"), (&[".dev"][..], "dev-release")]
    {
        if let Some(label) = labels.iter().find(|label| suffix.starts_with(**label)) {
            let after = &suffix[label.len()..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(format!("{name} {label:?} must be followed by a number"));
            }
            suffix = &after[digits..];
        }
    }
    if suffix.is_empty() {
        Ok(())
    } else {
        Err(format!("unexpected {suffix:?} (PEP 440 allows e.g. 7.12.0, 7.12.0rc1, 7.12.0.dev0, 7.12.0.post1+local)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_pep440() {
        for version in ["7.12.0", "7.12.0.dev0", "7.12.0rc1", "7.12.0a2.post1.dev3", "1!2.0", "7.0.0+abc.1", "7"] {
            assert_eq!(check_pep440(version), Ok(()), "{version}");
        }
    }

    #[test]
    fn rejects_others() {
        for version in ["", "v7.0", "7.0-beta", "7..0", "7.0.dev", "7.0+", "7.0 ", "7.0\n", "7.0.0.dev0\"x"] {
            assert!(check_pep440(version).is_err(), "{version:?}");
        }
    }
}
