"""What each GPU of this machine needs from the installed ROCm packages (SPEC §4): the
report of `rocm-sdk doctor`, and the runtime's warning about a GPU without device code.

A kpack-split install without the device package of a GPU's target fails at its first
kernel launch (`hipErrorInvalidImage`) with nothing pointing at the cause (TheRock #7564,
#7839, #7620). Here each GPU the KFD topology lists (`_kfd_topology`) is matched to the
package that carries its device code: in a kpack-split build the device package of its
target's owner (`rocm-sdk-device-gfx1250` for `gfx1250` and `gfx1250-strict`), in a
legacy build the libraries package of its family. Every other installed package split
into device wheels (`torch` with its `device-<target>` extras) is judged the same way
(`_device_extras`). Works with only `rocm` (and core) installed; reads nothing but the
topology and installed distributions' metadata.

Owns: the report, its text and JSON forms, and the once-per-process warnings. Does not
own: detecting GPUs (`_kfd_topology`), names and families (`_dist_info`), split packages'
extras and their sentences (`_device_extras`).
"""

import sys
from collections.abc import Callable, Iterable
from typing import IO, TYPE_CHECKING, Optional, TypedDict

from . import _dist_info as di
from . import _kfd_topology, _release
from ._kfd_topology import Agent

if TYPE_CHECKING:
    # Imported when a report is made, not with `rocm_sdk` (SPEC §4: the runtime stays cheap).
    from ._device_extras import PackageReport

STATUS_COVERED = "covered"
STATUS_MISSING = "missing"
STATUS_UNSUPPORTED = "unsupported"

_WARNED = False
# The top-level packages whose split distribution was checked in this process.
_WARNED_PACKAGES: set[str] = set()


class Package(TypedDict):
    """An installed distribution that carries a GPU's device code."""

    name: str
    version: str


class GpuReport(TypedDict):
    """One GPU of the report (`gpus` in the JSON, SPEC §4)."""

    node: int
    target: str
    # Kpack-split: the target whose device package carries it; legacy: its family.
    owner: Optional[str]
    status: str
    covered_by: list[Package]
    missing: list[str]
    extra: Optional[str]
    install: Optional[str]


class _DevelStateFields(TypedDict):
    installed: Optional[bool]
    expanded: bool
    root: Optional[str]


class DevelState(_DevelStateFields, total=False):
    """Whether devel is installed and expanded (`devel` in the JSON); `error` when the
    family rule cannot say which devel package is this process's."""

    error: str


class Report(TypedDict):
    """The whole report, as `rocm-sdk doctor --json` prints it (SPEC §4)."""

    version: str
    kpack_split: bool
    topology: str
    offered_targets: list[str]
    gpus: list[GpuReport]
    packages: "list[PackageReport]"
    devel: DevelState
    missing: list[str]
    install: Optional[str]
    ok: bool


class MissingDeviceCodeWarning(RuntimeWarning):
    """A GPU of this machine has no installed device package (SPEC §4). Never an error:
    filter it with `warnings.filterwarnings("ignore", category=...)` where it does not
    matter."""


def pip_line(extras: Iterable[Optional[str]]) -> str:
    """`pip install 'rocm[device-gfx1151]'`, the line that adds `extras`."""
    return "pip install 'rocm[%s]'" % ",".join(sorted({extra for extra in extras if extra is not None}))


def _installed_release(dist_name: str) -> Optional[str]:
    """The installed version of `dist_name` when it is this release (SPEC §2: what the
    pins of this release admit, a post release too), else None."""
    version = di.installed_dist_version(dist_name)
    if version is not None and _release.release_admits(di.__version__, version):
        return version
    return None


def _gpu_report(
    agent: Agent,
    owner: Optional[str],
    status: str,
    extra: Optional[str] = None,
    install: Optional[str] = None,
    covered_by: Optional[list[Package]] = None,
    missing: Optional[list[str]] = None,
) -> GpuReport:
    return {
        "node": agent.node,
        "target": agent.target,
        "owner": owner,
        "status": status,
        "covered_by": covered_by or [],
        "missing": missing or [],
        "extra": extra,
        "install": install,
    }


def _kpack_gpu(agent: Agent) -> GpuReport:
    owner = di.device_owner(agent.target)
    if di.match_target_family(agent.target) is None:
        return _gpu_report(agent, owner, STATUS_UNSUPPORTED)
    name = di.ALL_PACKAGES["device"].get_dist_package_name(owner)
    version = _installed_release(name)
    extra = "device-" + di.target_dist_segment(owner)
    if version is not None:
        return _gpu_report(agent, owner, STATUS_COVERED, extra, covered_by=[{"name": name, "version": version}])
    return _gpu_report(agent, owner, STATUS_MISSING, extra, pip_line([extra]), missing=[name])


def _legacy_gpu(agent: Agent) -> GpuReport:
    family = di.family_for_gpu(agent.target)
    if family is None:
        return _gpu_report(agent, family, STATUS_UNSUPPORTED)
    name = di.ALL_PACKAGES["libraries"].get_dist_package_name(family)
    version = _installed_release(name)
    if version is not None:
        return _gpu_report(agent, family, STATUS_COVERED, "libraries", covered_by=[{"name": name, "version": version}])
    # The sdist picks the family when it is built: name it, and bypass pip's cache of
    # an earlier choice (SPEC §3).
    install = "ROCM_SDK_TARGET_FAMILY=%s pip install --no-cache-dir 'rocm[libraries]'" % family
    return _gpu_report(agent, family, STATUS_MISSING, "libraries", install, missing=[name])


def _devel_state() -> DevelState:
    from . import _devel

    try:
        devel = _devel.find_devel_package()
    except ModuleNotFoundError:
        return {"installed": False, "expanded": False, "root": None}
    except ValueError as error:
        return {"installed": None, "expanded": False, "root": None, "error": str(error)}
    expanded = devel.is_expanded()
    return {"installed": True, "expanded": expanded, "root": str(devel.root) if expanded else None}


def _split_packages(agents: list[Agent]) -> "list[PackageReport]":
    """Every installed package split into device wheels but the SDK's own `rocm`, judged."""
    from . import _device_extras

    meta = di.ALL_PACKAGES["meta"].get_dist_package_name()
    return [_device_extras.judge(package, agents) for package in _device_extras.installed_split_packages([meta])]


def _install_line(sdk_install: Optional[str], packages: "list[PackageReport]") -> Optional[str]:
    """One command adding everything missing: the SDK's line (its pip form, or the legacy
    one naming the family), with each split package's requirement appended."""
    from . import _device_extras

    requirements = [
        _device_extras.pip_requirement(
            package["name"], [gpu["extra"] for gpu in package["gpus"] if gpu["status"] == STATUS_MISSING]
        )
        for package in packages
        if package["install"] is not None
    ]
    if not requirements:
        return sdk_install
    return "%s %s" % (sdk_install or "pip install", " ".join(requirements))


def diagnose(root: Optional[str] = None) -> Report:
    """The whole report as plain data (the `--json` shape, SPEC §4)."""
    root = _kfd_topology.topology_root() if root is None else root
    agents = _kfd_topology.detect_agents(root)
    gpu = _kpack_gpu if di.KPACK_SPLIT else _legacy_gpu
    gpus = [gpu(agent) for agent in agents]
    missing_extras = [report["extra"] for report in gpus if report["status"] == STATUS_MISSING]
    if di.KPACK_SPLIT:
        install = pip_line(missing_extras) if missing_extras else None
    else:
        install = next((report["install"] for report in gpus if report["install"]), None)
    packages = _split_packages(agents)
    missing = {name for report in gpus for name in report["missing"]}
    missing.update(wanted["name"] for package in packages for gpu in package["gpus"] for wanted in gpu["missing"])
    return {
        "version": di.__version__,
        "kpack_split": bool(di.KPACK_SPLIT),
        "topology": root,
        "offered_targets": list(di.AVAILABLE_TARGET_FAMILIES),
        "gpus": gpus,
        "packages": packages,
        "devel": _devel_state(),
        "missing": sorted(missing),
        "install": _install_line(install, packages),
        "ok": all(report["status"] == STATUS_COVERED for report in gpus)
        and all(gpu["status"] == STATUS_COVERED for package in packages for gpu in package["gpus"]),
    }


def _gpu_line(report: GpuReport) -> str:
    owner = "" if report["owner"] in (None, report["target"]) else " (its packages: %s)" % report["owner"]
    head = "GPU %s (KFD node %d)%s: " % (report["target"], report["node"], owner)
    if report["status"] == STATUS_COVERED:
        return head + "covered by " + ", ".join("%s %s" % (p["name"], p["version"]) for p in report["covered_by"])
    if report["status"] == STATUS_MISSING:
        return head + "missing %s; add it with: %s" % (", ".join(report["missing"]), report["install"])
    return head + "this ROCm build has no device code for it (it offers %s)" % (
        ", ".join(di.AVAILABLE_TARGET_FAMILIES) or "none"
    )


def render_text(report: Report) -> str:
    """The report as `rocm-sdk doctor` prints it."""
    mode = "kpack-split" if report["kpack_split"] else "legacy"
    lines = ["ROCm %s (%s build), GPUs from %s" % (report["version"], mode, di.printable(report["topology"]))]
    if not report["gpus"]:
        lines.append("no GPU found: nothing needs device code")
    lines += [_gpu_line(gpu) for gpu in report["gpus"]]
    if report["gpus"]:
        from . import _device_extras

        lines += [line for package in report["packages"] for line in _device_extras.report_lines(package)]
    devel = report["devel"]
    if devel.get("error"):
        lines.append("devel: " + devel["error"])
    elif not devel["installed"]:
        lines.append("devel: not installed (add it with: pip install 'rocm[devel]')")
    elif devel["expanded"]:
        lines.append("devel: installed, expanded at %s" % di.printable(devel["root"]))
    else:
        lines.append("devel: installed, not expanded yet (`rocm-sdk init` expands it)")
    if report["install"]:
        lines.append("to add what is missing: " + di.printable(report["install"]))
    elif report["ok"]:
        lines.append("everything this machine's GPUs need is installed")
    return "\n".join(lines) + "\n"


def missing_device_code_message(root: Optional[str] = None) -> Optional[str]:
    """The runtime's warning, or None (SPEC §4): only in a kpack-split install (its
    libraries package installed) on a machine with a GPU whose target the build offers
    and whose device package is not installed. Targets the build does not offer are
    `rocm-sdk doctor`'s to report: there is nothing to install for them."""
    if not di.KPACK_SPLIT or not di.ALL_PACKAGES["libraries"].is_installed():
        return None
    root = _kfd_topology.topology_root() if root is None else root
    gpus = [_kpack_gpu(agent) for agent in _kfd_topology.detect_agents(root)]
    missing = [gpu for gpu in gpus if gpu["status"] == STATUS_MISSING]
    if not missing:
        return None
    names = ", ".join("%s (KFD node %d)" % (gpu["target"], gpu["node"]) for gpu in missing)
    return (
        "no ROCm device package is installed for the GPU %s of this machine, so the ROCm libraries "
        "cannot run kernels on it (hipErrorInvalidImage); add it with: %s (`rocm-sdk doctor` says more)"
        % (names, pip_line([gpu["extra"] for gpu in missing]))
    )


def warn_once(emit: Callable[[str], object]) -> None:
    """Calls `emit(message)` with the missing-device-code message, once per process and
    only when there is one. Never raises: a check that fails is logged and skipped."""
    global _WARNED
    if _WARNED:
        return
    _WARNED = True
    try:
        message = missing_device_code_message()
    except Exception as error:  # A diagnosis must never break the program it runs in.
        di._log("cannot check the GPUs' device packages: %s" % error)
        return
    if message is not None:
        emit(message)


def package_warning(
    module_name: Optional[str], module_file: Optional[str], root: Optional[str] = None
) -> Optional[str]:
    """The runtime's warning about the split package `module_name` belongs to, or None
    (SPEC §4): only when a GPU of this machine lacks device wheels that package offers for
    its target, in the doctor's words. Reads that one package's metadata, and the topology
    only when it offers device extras. A GPU the package was not built for is the doctor's
    to report: there is nothing to install for it."""
    from . import _device_extras

    package = _device_extras.split_package_of_module(module_name, module_file)
    if package is None:
        return None
    root = _kfd_topology.topology_root() if root is None else root
    sentence = _device_extras.missing_sentence(_device_extras.judge(package, _kfd_topology.detect_agents(root)))
    return None if sentence is None else sentence + " (`rocm-sdk doctor` says more)"


def warn_once_for_module(module_name: Optional[str], module_file: Optional[str], emit: Callable[[str], object]) -> None:
    """Calls `emit(message)` with `package_warning`'s message, once per process and
    top-level package, and only when there is one. Never raises."""
    top = (module_name or "").partition(".")[0]
    if top in _WARNED_PACKAGES:
        return
    _WARNED_PACKAGES.add(top)
    try:
        message = package_warning(module_name, module_file)
    except Exception as error:  # A diagnosis must never break the program it runs in.
        di._log("cannot check the device wheels of %s: %s" % (top, error))
        return
    if message is not None:
        emit(message)


def warn_on_stderr(program: str) -> None:
    """`warn_once` for a console script: one `{program}: warning: ...` line on stderr."""
    warn_once(
        lambda message: print("%s: warning: %s" % (program, di.printable(message, keep_newlines=True)), file=sys.stderr)
    )


def exit_code(report: Report) -> int:
    return 0 if report["ok"] else 1


def _json(report: Report) -> str:
    import json

    return json.dumps(report, indent=2, sort_keys=True) + "\n"


def run(as_json: bool = False, out: Optional[IO[str]] = None) -> int:
    """`rocm-sdk doctor [--json]`: prints the report; returns 0 when every GPU is covered."""
    out = sys.stdout if out is None else out
    report = diagnose()
    out.write(_json(report) if as_json else render_text(report))
    return exit_code(report)
