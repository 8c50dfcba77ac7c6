"""Which versions are one release (SPEC §2, post releases): exactly the versions the pins
of a set admit as pip reads them with `--pre` (TheRock's install line), so the runtime's
checks (`initialize_process(check_version=…)`, device links, `rocm-sdk doctor`, `rocm-sdk
test`) call a version of the set what `pip install 'rocm[…]'` installs as one, and the
release gate, which reads the same pins, agrees (a test walks one table of versions
through pip's `packaging`, this module and the gate).

The pins are `_dist_info.release_specifier`'s: `>=R,<R.0.1` for a final release R or its
post release, `==V` for any other version. The rocm meta package only: the other
packages check no versions.
"""

import re
from typing import Optional

from ._dist_info import _VERSION, final_release


def _parts(text: Optional[str], release: bool = False) -> tuple[object, ...]:
    # Numbers as numbers; a release (epoch first) without the trailing zeros PEP 440 ignores.
    parts = [int(part) if part.isdigit() else part for part in (text or "").split(".") if part]
    while release and parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _ordered_release(match: "re.Match[str]", extra: str = "") -> tuple[object, ...]:
    # Epoch and release as one tuple: tuples without trailing zeros order as PEP 440 orders.
    return _parts("%s.%s%s" % (match.group(1) or 0, match.group(2), extra), release=True)


def release_admits(set_version: str, version: str) -> bool:
    """Whether the pins of a set of `set_version` admit `version` as pip reads them with
    `--pre` (SPEC §2). For a final release R or R.postN, what PEP 440 orders from R up to
    R.0.1: R, R.postN, R.postN.devM, their local builds, and releases extending R by two
    zeros and more (`R.0.0.1`, which no specifier can leave out); never R's pre or dev
    releases, `R.0.1` or `R.1`. For any other V: V as PEP 440 compares versions
    (`7.12.0.0.dev0` is `7.12.0.dev0`), local builds of V too unless V has a local label.
    A version not in normal form is only itself."""
    pin, other = _VERSION.match(set_version), _VERSION.match(version)
    if pin is None or other is None:
        return set_version == version
    ours, theirs = _ordered_release(pin), _ordered_release(other)
    if final_release(set_version) is None:
        public = ours == theirs and all(_parts(pin.group(n)) == _parts(other.group(n)) for n in (3, 4, 5, 6))
        return public and (not pin.group(7) or _parts(pin.group(7)) == _parts(other.group(7)))
    if theirs == ours:
        # Above R: a post release (a dev of one too) or a local build; below: pre and dev.
        return other.group(3) is None and (other.group(6) is None or other.group(5) is not None)
    return ours < theirs < _ordered_release(pin, ".0.1")


def same_release(first: str, second: str) -> bool:
    """Whether two versions are one release, either read as the set's: `7.12.0` and
    `7.12.0.post1` are; `7.12.0.1` and `7.12.1` never are."""
    return release_admits(first, second) or release_admits(second, first)
