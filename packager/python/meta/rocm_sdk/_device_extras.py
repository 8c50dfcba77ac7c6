"""Installed packages split into device wheels, judged against this machine's GPUs (SPEC §4,
`rocm-sdk doctor`; SPEC §12 says how a split host wheel names its device wheels).

A package split by `cargo xtask split` or rocm-kpack (`torch`, `hipext`) keeps its host
code and offers, per GPU target, an extra `device-<target>` whose requirements are its
device wheels (`hipext-device-gfx90a==1.0`, and a family's wheel several targets' extras
share). Installed without them, every kernel launch fails with `hipErrorInvalidImage` and
nothing says why (TheRock #7839). Here each GPU the KFD topology lists is matched to the
extra of its bare target (`gfx90a` for a `gfx90a:xnack+` GPU too) and is:
`covered` when every requirement of that extra is installed at a version it admits,
`missing` (with the `pip install '<dist>[device-<target>]'` line that adds them), or
`unsupported` when the package offers device extras but none for that target (it was not
built for it: there is nothing to install).

Reads installed metadata only (`importlib.metadata`): no archive is opened, nothing
imported. The SDK's own `rocm` distribution is the rest of the doctor's to judge.

Owns: finding split packages, judging them, their JSON entries and their sentences (the
doctor's lines and the runtime's warning say the same words). Does not own: reading
requirement lines (`_requirements`), detecting GPUs (`_kfd_topology`), the report as a
whole (`_doctor`).
"""

import importlib.metadata
import os
import stat
from collections.abc import Iterable, Sequence
from typing import NamedTuple, Optional, TypedDict

from . import _requirements as req
from ._dist_info import _log, base_target, printable
from ._kfd_topology import Agent

STATUS_COVERED = "covered"
STATUS_MISSING = "missing"
STATUS_UNSUPPORTED = "unsupported"

EXTRA_PREFIX = "device-"
# The extra of every device wheel at once: no target's.
ALL_EXTRA = "device-all"


class Installed(TypedDict):
    """An installed device wheel that covers a GPU."""

    name: str
    version: str


class Wanted(TypedDict):
    """A device wheel a GPU's extra requires that is not installed as required: its
    installed version (None: not installed) and the specifier it fails (`==1.0`)."""

    name: str
    requires: str
    installed: Optional[str]


class PackageGpu(TypedDict):
    """One GPU as one split package sees it (`packages[].gpus` in the doctor's JSON)."""

    node: int
    target: str
    extra: Optional[str]
    status: str
    covered_by: list[Installed]
    missing: list[Wanted]


class PackageReport(TypedDict):
    """One installed split package (`packages` in the doctor's JSON, SPEC §4): the targets
    its extras offer, each GPU, and the line that adds what its GPUs lack (None: nothing)."""

    name: str
    version: str
    offered_targets: list[str]
    gpus: list[PackageGpu]
    install: Optional[str]


class SplitPackage(NamedTuple):
    """An installed distribution offering `device-<target>` extras: its name and version as
    its metadata spells them, and its requirement lines, parsed."""

    name: str
    version: str
    extras: tuple[str, ...]
    requirements: tuple[req.Requirement, ...]

    def offered_targets(self) -> list[str]:
        return sorted(extra[len(EXTRA_PREFIX) :] for extra in self.extras if extra != ALL_EXTRA)


def _metadata_waits(dist: importlib.metadata.Distribution) -> bool:
    """Whether reading `dist`'s metadata could wait forever: its METADATA (or PKG-INFO) on
    disk is not a regular file (a FIFO). The doctor waits on nothing (SPEC §5's rule)."""
    folder = getattr(dist, "_path", None)  # A distribution on disk: its `.dist-info`.
    for name in ("METADATA", "PKG-INFO"):
        try:
            mode = os.stat(os.path.join(str(folder), name)).st_mode
        except (OSError, ValueError):
            continue
        return not stat.S_ISREG(mode)
    return False


def read_split_package(dist: importlib.metadata.Distribution) -> Optional[SplitPackage]:
    """`dist` as a split package, or None: no `device-<target>` extra, or a name that is not
    a distribution's (which no pip line could name), or metadata that is not a regular
    file. Metadata only."""
    if _metadata_waits(dist):
        _log("ignoring the distribution at %s: its metadata is not a regular file" % getattr(dist, "_path", "?"))
        return None
    metadata = dist.metadata
    name = str(metadata.get("Name") or "").strip()
    extras = tuple(
        sorted(
            {
                req.normalize_extra(str(extra))
                for extra in metadata.get_all("Provides-Extra") or []
                if req.normalize_extra(str(extra)).startswith(EXTRA_PREFIX)
            }
        )
    )
    if not extras or extras == (ALL_EXTRA,):
        return None
    if not req.is_name(name):
        _log("ignoring the device extras of a distribution named %r: not a distribution name" % name)
        return None
    requirements = []
    for line in metadata.get_all("Requires-Dist") or []:
        requirement = req.parse_requirement(str(line))
        if requirement is None:
            _log("%s: ignoring the requirement %r: not PEP 508" % (name, str(line)))
            continue
        requirements.append(requirement)
    return SplitPackage(name, str(metadata.get("Version") or "").strip(), extras, tuple(requirements))


def installed_split_packages(leave_out: Iterable[str] = ()) -> list[SplitPackage]:
    """Every split package on `sys.path`, by name; the first of a name found, as imports
    and `importlib.metadata.version` find it. A distribution whose metadata cannot be
    read is logged and left out: a diagnosis never stops on one broken install."""
    skipped = {req.normalize_name(name) for name in leave_out}
    seen: set[str] = set()
    packages = []
    for dist in importlib.metadata.distributions():
        try:
            if _metadata_waits(dist):
                continue
            name = req.normalize_name(str(dist.metadata.get("Name") or ""))
            if name in seen or name in skipped:
                continue
            seen.add(name)
            package = read_split_package(dist)
        except Exception as error:  # A broken install elsewhere must not hide the report.
            _log("cannot read an installed distribution's metadata: %s" % error)
            continue
        if package is not None:
            packages.append(package)
    return sorted(packages, key=lambda package: req.normalize_name(package.name))


def split_package_of_module(module_name: Optional[str], module_file: Optional[str]) -> Optional[SplitPackage]:
    """The split package a module belongs to, found cheaply: the distribution named as its
    top-level package (`torch._rocm_init` -> `torch`), when that distribution lies where
    the module does; else None. Reads one distribution's metadata, nothing else."""
    top = (module_name or "").partition(".")[0]
    if not top or top == "__main__" or not req.is_name(top):
        return None
    try:
        dist = importlib.metadata.distribution(top)
    except importlib.metadata.PackageNotFoundError:
        return None
    if module_file is not None:
        site = os.path.realpath(str(dist.locate_file("")))
        if not os.path.realpath(module_file).startswith(site.rstrip(os.sep) + os.sep):
            return None  # Another distribution of that name, elsewhere on sys.path.
    return read_split_package(dist)


def _installed_version(name: str) -> Optional[str]:
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None
    if _metadata_waits(dist):
        return None
    return str(dist.version)


def _judge_gpu(package: SplitPackage, agent: Agent) -> PackageGpu:
    extra = EXTRA_PREFIX + base_target(agent.target)
    gpu: PackageGpu = {
        "node": agent.node,
        "target": agent.target,
        "extra": extra,
        "status": STATUS_COVERED,
        "covered_by": [],
        "missing": [],
    }
    if extra not in package.extras:
        gpu["extra"] = None
        gpu["status"] = STATUS_UNSUPPORTED
        return gpu
    for requirement in package.requirements:
        if not req.required_by_extra(requirement, extra):
            continue
        version = _installed_version(requirement.name)
        if version is not None and req.admits(requirement, version):
            gpu["covered_by"].append({"name": requirement.name, "version": version})
        else:
            wanted: Wanted = {
                "name": requirement.name,
                "requires": req.specifier_text(requirement),
                "installed": version,
            }
            gpu["missing"].append(wanted)
    if gpu["missing"]:
        gpu["status"] = STATUS_MISSING
    return gpu


def pip_requirement(name: str, extras: Iterable[Optional[str]]) -> str:
    """`'hipext[device-gfx1030,device-gfx90a]'`, quoted for a shell (a checked name and
    extras made of a target: nothing in it needs more than the quotes)."""
    return "'%s[%s]'" % (name, ",".join(sorted({extra for extra in extras if extra is not None})))


def judge(package: SplitPackage, agents: Sequence[Agent]) -> PackageReport:
    """What `package` has for each GPU of `agents` (the doctor's JSON entry)."""
    gpus = [_judge_gpu(package, agent) for agent in agents]
    missing = [gpu["extra"] for gpu in gpus if gpu["status"] == STATUS_MISSING]
    return {
        "name": package.name,
        "version": package.version,
        "offered_targets": package.offered_targets(),
        "gpus": gpus,
        "install": "pip install " + pip_requirement(package.name, missing) if missing else None,
    }


def _gpu_name(gpu: PackageGpu) -> str:
    return "%s (KFD node %d)" % (gpu["target"], gpu["node"])


def _wanted_text(wanted: Wanted) -> str:
    text = wanted["name"] + wanted["requires"]
    return text if wanted["installed"] is None else "%s (%s installed)" % (text, wanted["installed"])


def missing_sentence(report: PackageReport) -> Optional[str]:
    """The sentence for the GPUs `report` lacks device wheels for, the same in the doctor's
    report and the runtime's warning; None when none lacks any. Escaped for printing."""
    gpus = [gpu for gpu in report["gpus"] if gpu["status"] == STATUS_MISSING]
    if not gpus:
        return None
    wanted = sorted({_wanted_text(wanted) for gpu in gpus for wanted in gpu["missing"]})
    return printable(
        "%s %s lacks the device code for the GPU%s %s of this machine (missing: %s), so its kernels fail "
        "there with hipErrorInvalidImage; add it with: %s"
        % (
            report["name"],
            report["version"],
            "s" if len(gpus) > 1 else "",
            ", ".join(_gpu_name(gpu) for gpu in gpus),
            ", ".join(wanted),
            report["install"],
        )
    )


def report_lines(report: PackageReport) -> list[str]:
    """The doctor's lines for one split package: each covered GPU, the GPUs it lacks device
    wheels for (one sentence), each GPU it has no device code for. Escaped for printing."""
    head = "%s %s" % (report["name"], report["version"])
    lines = []
    for gpu in report["gpus"]:
        if gpu["status"] == STATUS_COVERED:
            wheels = ", ".join("%s %s" % (wheel["name"], wheel["version"]) for wheel in gpu["covered_by"])
            lines.append("%s: GPU %s covered by %s" % (head, _gpu_name(gpu), wheels or "the package itself"))
    sentence = missing_sentence(report)
    if sentence is not None:
        lines.append(sentence)
    for gpu in report["gpus"]:
        if gpu["status"] == STATUS_UNSUPPORTED:
            lines.append(
                "%s has no device code for %s (KFD node %d): it offers %s"
                % (head, gpu["target"], gpu["node"], ", ".join(report["offered_targets"]))
            )
    return [printable(line) for line in lines]
