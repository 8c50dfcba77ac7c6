"""What a `Requires-Dist` line of installed metadata says (PEP 508, PEP 440, PEP 685), read
with the standard library only: the distribution it names, the versions it admits, and
whether its environment marker applies here for a given extra (SPEC §4, `rocm-sdk doctor`
on packages split into device wheels).

The markers that matter here are the extra markers split wheels carry,
`extra == "device-gfx942"` (ours) or `extra == 'device-gfx942'`, alone or joined to
platform markers with `and`/`or` and parentheses (the `rocm` sdist's `device-all`), and
rocm-kpack's variant lines (`"amd :: gfx_arch :: gfx942" in variant_properties`). A
marker is evaluated as PEP 508 says, against this interpreter; a comparison with a
variable PEP 508 does not define (`variant_properties`) is false, so such a line never
counts as an extra's requirement. A version is compared as PEP 440 orders it; one that is
not a PEP 440 version is equal only to itself and admits any ordering.

Owns: parsing requirements, evaluating markers, matching versions. Does not own: which
distributions are installed or what a missing one means (`_device_extras`).
"""

import os
import platform
import re
import sys
from collections.abc import Callable
from typing import NamedTuple, Optional, Union

# PEP 508 names: letters and digits, `.`, `_`, `-` inside.
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_REQUIREMENT = re.compile(
    r"^\s*(?P<name>%s)\s*(?:\[(?P<extras>[^\]]*)\])?\s*(?P<spec>[^;]*?)\s*(?:;\s*(?P<marker>.*?))?\s*$" % _NAME
)
_FULL_NAME = re.compile(r"^%s$" % _NAME)
_CLAUSE = re.compile(r"^\s*(?P<op>~=|===|==|!=|<=|>=|<|>)\s*(?P<version>[^\s,]+)\s*$")

# PEP 440's version pattern (its appendix), case-insensitive, with the forms it normalises.
_PEP440 = re.compile(
    r"^\s*v?(?:(?P<epoch>[0-9]+)!)?(?P<release>[0-9]+(?:\.[0-9]+)*)"
    r"(?:[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>[0-9]+)?)?"
    r"(?:-(?P<post_n1>[0-9]+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?)?"
    r"(?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$",
    re.IGNORECASE,
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}

_TOKEN = re.compile(
    r"\s*(?:(?P<string>'[^']*'|\"[^\"]*\")|(?P<op>===|==|!=|<=|>=|~=|<|>)|(?P<paren>[()])"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_.]*))"
)
# Marker variables whose values are versions when both sides parse as ones (PEP 508).
_VERSION_VARIABLES = {"python_version", "python_full_version", "implementation_version", "platform_release"}


class MarkerError(ValueError):
    """A marker this reader cannot parse."""


class Requirement(NamedTuple):
    """One `Requires-Dist` value: the distribution, its specifier clauses (`("==", "1.0")`;
    none for a URL or no specifier) and the marker's text ("" for none)."""

    name: str
    clauses: tuple[tuple[str, str], ...]
    marker: str


def normalize_name(name: str) -> str:
    """A distribution name as PEP 503 compares them: `Hipext_Device.gfx90a` -> `hipext-device-gfx90a`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def normalize_extra(extra: str) -> str:
    """An extra as PEP 685 compares them: `Device_GFX90a` -> `device-gfx90a`."""
    return normalize_name(extra.strip())


def is_name(text: str) -> bool:
    """Whether `text` is a valid PEP 508 distribution name (so it is safe in a pip line)."""
    return _FULL_NAME.match(text) is not None


def parse_requirement(text: str) -> Optional[Requirement]:
    """`hipext-device-gfx90a==1.0; extra == "device-gfx90a"` as a `Requirement`; None when
    the line is not one (an invalid name, a specifier that is not PEP 440's)."""
    match = _REQUIREMENT.match(text)
    if match is None:
        return None
    spec = match.group("spec").strip()
    clauses: list[tuple[str, str]] = []
    if spec.startswith("@"):
        spec = ""  # A direct reference: any version it gives.
    if spec.startswith("(") and spec.endswith(")"):
        spec = spec[1:-1]
    for part in spec.split(",") if spec else []:
        clause = _CLAUSE.match(part)
        if clause is None:
            return None
        clauses.append((clause.group("op"), clause.group("version")))
    return Requirement(match.group("name"), tuple(clauses), (match.group("marker") or "").strip())


# --- PEP 440 versions -------------------------------------------------------------------

_Key = tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]


def _version_key(version: str) -> Optional[_Key]:
    """An ordering key of a PEP 440 version (its local label left out), or None."""
    match = _PEP440.match(version)
    if match is None:
        return None
    release = [int(part) for part in match.group("release").split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    has_post = match.group("post_n1") is not None or match.group("post_l") is not None
    has_dev = match.group("dev_l") is not None
    if match.group("pre_l") is not None:
        pre: tuple[int, ...] = (0, _PRE_RANK[match.group("pre_l").lower()], int(match.group("pre_n") or 0))
    elif has_dev and not has_post:
        pre = (-1,)  # `1.0.dev0` sorts before `1.0a1`.
    else:
        pre = (1,)
    post = (0, int(match.group("post_n1") or match.group("post_n2") or 0)) if has_post else (-1,)
    dev = (0, int(match.group("dev_n") or 0)) if has_dev else (1,)
    return (int(match.group("epoch") or 0), tuple(release), pre, post, dev)


def _local(version: str) -> str:
    match = _PEP440.match(version)
    return (match.group("local") or "").lower().replace("-", ".").replace("_", ".") if match else ""


def _prefix_matches(version: str, prefix: str) -> bool:
    """`==1.0.*`: the release of `version` (local label left out) starts with `prefix`'s."""
    mine, theirs = _PEP440.match(version), _PEP440.match(prefix)
    if mine is None or theirs is None:
        return False
    wanted = [int(part) for part in theirs.group("release").split(".")]
    have = [int(part) for part in mine.group("release").split(".")]
    have += [0] * max(0, len(wanted) - len(have))
    return (int(mine.group("epoch") or 0), have[: len(wanted)]) == (int(theirs.group("epoch") or 0), wanted)


def _clause_admits(version: str, op: str, wanted: str) -> bool:
    if op == "===":
        return version.strip().lower() == wanted.strip().lower()
    if op in ("==", "!=") and wanted.endswith(".*"):
        return _prefix_matches(version, wanted[:-2]) == (op == "==")
    have, want = _version_key(version), _version_key(wanted)
    if have is None or want is None:
        # Not PEP 440: only itself is equal to it, and no order is known.
        equal = version.strip() == wanted.strip()
        return equal if op == "==" else (not equal if op == "!=" else True)
    if op in ("==", "!="):
        equal = have == want and (not _local(wanted) or _local(version) == _local(wanted))
        return equal == (op == "==")
    if op == "~=":
        # `~=2.2.post3` is `>=2.2.post3, ==2.*`: the release without its last part.
        match = _PEP440.match(wanted)
        release = match.group("release").split(".") if match else []
        epoch = "%s!" % match.group("epoch") if match and match.group("epoch") else ""
        return have >= want and _prefix_matches(version, epoch + ".".join(release[:-1] or release))
    return {"<": have < want, "<=": have <= want, ">": have > want, ">=": have >= want}[op]


def admits(requirement: Requirement, version: str) -> bool:
    """Whether the installed `version` is one `requirement`'s specifier admits (every clause)."""
    return all(_clause_admits(version, op, wanted) for op, wanted in requirement.clauses)


def specifier_text(requirement: Requirement) -> str:
    """The specifier as a requirement line spells it: `==1.0`, `>=1,<2`, "" for any."""
    return ",".join(op + wanted for op, wanted in requirement.clauses)


# --- PEP 508 markers --------------------------------------------------------------------


def _environment() -> dict[str, str]:
    """The marker variables of this interpreter (PEP 508's table)."""
    info = sys.implementation.version
    implementation = "%d.%d.%d" % (info.major, info.minor, info.micro)
    if info.releaselevel != "final":
        implementation += info.releaselevel[0] + str(info.serial)
    return {
        "os_name": os.name,
        "sys_platform": sys.platform,
        "platform_machine": platform.machine(),
        "platform_python_implementation": platform.python_implementation(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "python_full_version": platform.python_version(),
        "implementation_name": sys.implementation.name,
        "implementation_version": implementation,
    }


_ENVIRONMENT: dict[str, str] = {}


class _Comparison(NamedTuple):
    """`left op right`; a side is a variable's name or a string's text."""

    left: str
    left_is_variable: bool
    op: str
    right: str
    right_is_variable: bool


class _Joined(NamedTuple):
    """Markers joined by `and` or `or`."""

    word: str
    items: "list[_Node]"


_Node = Union[_Comparison, _Joined]


def _tokens(marker: str) -> list[tuple[str, str]]:
    tokens = []
    at = 0
    while marker[at:].strip():
        match = _TOKEN.match(marker, at)
        if match is None:
            raise MarkerError("cannot read the marker at %r" % marker[at:])
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        at = match.end()
    return tokens


class _Parser:
    """PEP 508's marker grammar: `or` of `and` of comparisons and parenthesised markers."""

    def __init__(self, marker: str) -> None:
        self.tokens = _tokens(marker)
        self.at = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token[0] == "end":
            raise MarkerError("the marker ends too early")
        self.at += 1
        return token

    def joined(self, word: str, inner: Callable[[], _Node]) -> _Node:
        items = [inner()]
        while self.peek() == ("word", word):
            self.take()
            items.append(inner())
        return items[0] if len(items) == 1 else _Joined(word, items)

    def any_of(self) -> _Node:
        return self.joined("or", self.all_of)

    def all_of(self) -> _Node:
        return self.joined("and", self.atom)

    def side(self) -> tuple[str, bool]:
        kind, text = self.take()
        if kind == "string":
            return text[1:-1], False
        if kind == "word" and text not in ("and", "or", "in", "not"):
            return text, True
        raise MarkerError("expected a variable or a string, found %r" % text)

    def atom(self) -> _Node:
        if self.peek() == ("paren", "("):
            self.take()
            node = self.any_of()
            if self.take() != ("paren", ")"):
                raise MarkerError("a parenthesis is not closed")
            return node
        left = self.side()
        kind, text = self.take()
        if kind == "word" and text == "not":
            if self.take() != ("word", "in"):
                raise MarkerError("`not` without `in`")
            text = "not in"
        elif not (kind == "op" or (kind == "word" and text == "in")):
            raise MarkerError("expected a comparison, found %r" % text)
        right = self.side()
        return _Comparison(left[0], left[1], text, right[0], right[1])


def parse_marker(marker: str) -> _Node:
    """The marker's tree; raises MarkerError when it is not PEP 508's grammar."""
    parser = _Parser(marker)
    node = parser.any_of()
    if parser.peek()[0] != "end":
        raise MarkerError("unexpected %r after the marker" % parser.peek()[1])
    return node


def _value(text: str, is_variable: bool, extra: str) -> Optional[str]:
    if not is_variable:
        return text
    if text == "extra":
        return extra
    if not _ENVIRONMENT:
        _ENVIRONMENT.update(_environment())
    return _ENVIRONMENT.get(text)


def _compare(node: _Comparison, extra: str) -> bool:
    lhs, rhs = _value(node.left, node.left_is_variable, extra), _value(node.right, node.right_is_variable, extra)
    if lhs is None or rhs is None:
        return False  # A variable PEP 508 does not define: not this environment.
    op = node.op
    variables = {
        name
        for name, is_variable in ((node.left, node.left_is_variable), (node.right, node.right_is_variable))
        if is_variable
    }
    if "extra" in variables:
        lhs, rhs = normalize_extra(lhs), normalize_extra(rhs)
        return {"==": lhs == rhs, "!=": lhs != rhs}.get(op, False)
    if op == "in":
        return lhs in rhs
    if op == "not in":
        return lhs not in rhs
    if variables & _VERSION_VARIABLES and _version_key(lhs) is not None and _version_key(rhs) is not None:
        return _clause_admits(lhs, op, rhs)
    if op in ("==", "==="):
        return lhs == rhs
    if op == "!=":
        return lhs != rhs
    return {"<": lhs < rhs, "<=": lhs <= rhs, ">": lhs > rhs, ">=": lhs >= rhs}.get(op, False)


def evaluate(node: _Node, extra: str = "") -> bool:
    """Whether the marker holds here with `extra` as the extra being installed ("" none)."""
    if isinstance(node, _Joined):
        results = (evaluate(item, extra) for item in node.items)
        return all(results) if node.word == "and" else any(results)
    return _compare(node, extra)


_EXTRA_COMPARISON = re.compile(r"""extra\s*==\s*(['"])(?P<extra>[^'"]*)\1|(['"])(?P<reversed>[^'"]*)\3\s*==\s*extra""")


def required_by_extra(requirement: Requirement, extra: str) -> bool:
    """Whether `requirement` is installed with `extra` and not without it, here. A marker
    this reader cannot parse counts when it compares `extra` to `extra` (either side,
    either quote) and never otherwise."""
    if not requirement.marker:
        return False
    try:
        node = parse_marker(requirement.marker)
    except MarkerError:
        wanted = normalize_extra(extra)
        return any(
            normalize_extra(match.group("extra") or match.group("reversed") or "") == wanted
            for match in _EXTRA_COMPARISON.finditer(requirement.marker)
        )
    return evaluate(node, normalize_extra(extra)) and not evaluate(node, "")
