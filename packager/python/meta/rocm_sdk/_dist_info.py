"""Distribution information of the ROCm Python packages (SPEC §2, §4): the package and
library tables, the names derived from them, and the target family rule.

Every pure package ships this file as it is, beside the `_dist_info_data.py` the packager
generates for that package: the constants describing the build (its version, families,
owners and the package this copy ships in) come from there, so this module is real code
that linters read and tracebacks point into. Code outside this project imports these
names from `_dist_info` (PyTorch loaders, PyInstaller hooks, JAX plugins, SPEC §4 "Names
others import"), so they keep the reference's spelling and behaviour. Standard library
only; Python 3.9.
"""

import importlib.machinery
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from typing import Optional

# Re-exported: downstream code reads these as attributes of `_dist_info`.
from ._dist_info_data import AVAILABLE_TARGET_FAMILIES as AVAILABLE_TARGET_FAMILIES
from ._dist_info_data import DEFAULT_TARGET_FAMILY as DEFAULT_TARGET_FAMILY
from ._dist_info_data import DEVEL_TARGET_SPECIFIC as DEVEL_TARGET_SPECIFIC
from ._dist_info_data import DEVICE_TARGETS as DEVICE_TARGETS
from ._dist_info_data import KPACK_SPLIT as KPACK_SPLIT
from ._dist_info_data import LINUX_TARGET_FAMILIES as LINUX_TARGET_FAMILIES
from ._dist_info_data import PY_PACKAGE_SUFFIX_NONCE as PY_PACKAGE_SUFFIX_NONCE
from ._dist_info_data import TARGET_OWNERS as TARGET_OWNERS
from ._dist_info_data import THIS_PACKAGE_LOGICAL_NAME as THIS_PACKAGE_LOGICAL_NAME
from ._dist_info_data import THIS_TARGET_FAMILY as THIS_TARGET_FAMILY
from ._dist_info_data import WINDOWS_TARGET_FAMILIES as WINDOWS_TARGET_FAMILIES
from ._dist_info_data import __version__ as __version__

# Where a target family came from: the environment, the target-specific packages installed
# here (run time only), the KFD topology (install time only: the `rocm` sdist's backend
# reads it, SPEC §3), `offload-arch`, or the fallback.
SOURCE_ENVIRONMENT = "environment"
SOURCE_INSTALLED = "installed"
SOURCE_KFD = "kfd topology"
SOURCE_DETECTED = "detected"
SOURCE_DEFAULT = "default"

CACHED_TARGET_FAMILY: Optional[str] = None

# The suffixes a detected `gfxNNNN` may carry as the family `gfxNNNX-{suffix}`.
FAMILY_SUFFIXES = ("-all", "-dgpu", "-igpu", "-dcgpu")


class TargetFamilyError(ValueError):
    """No target family can be chosen: the environment names one that is not on offer or
    not installed, or several are installed and nothing says which (SPEC §3, §4). A
    ValueError, as the reference raises, so existing callers keep catching it."""


def printable(text: object, keep_newlines: bool = False) -> str:
    """`text` with control characters escaped (`\\x1b`, `\\n`), as the packager escapes
    names, so a hostile value (an environment variable, a file name) cannot rewrite the
    terminal or forge a line of a message. With keep_newlines, a message's own line breaks
    stay; values put into a message are escaped whole before that."""
    out = []
    for ch in str(text):
        if ch == " " or ch.isprintable() or (keep_newlines and ch == "\n"):
            out.append(ch)
        else:
            out.append(repr(ch)[1:-1])
    return "".join(out)


def _log(message: str) -> None:
    # The runtime prints nothing unless asked to (SPEC §4, Environment).
    if os.environ.get("ROCM_SDK_VERBOSE") == "1":
        print("rocm_sdk: " + printable(message, keep_newlines=True), file=sys.stderr)


def _ascii_lower(text: str) -> str:
    # ASCII only, so Python and the Rust packager agree on every name.
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def base_target(name: str) -> str:
    """The base of a target id or family, lower-cased: `gfx90a:xnack+` -> `gfx90a`."""
    return _ascii_lower(name.split(":", 1)[0].strip())


def target_spelling(name: str) -> str:
    """A family or target as this build spells it, without feature suffixes: the spelling
    on offer when one matches case-insensitively (`GFX110X-ALL` -> `gfx110X-all`), else the
    name as given (`gfx90a:xnack+` -> `gfx90a`)."""
    given = str(name).split(":", 1)[0].strip()
    wanted = _ascii_lower(given)
    for family in [*AVAILABLE_TARGET_FAMILIES, *DEVICE_TARGETS]:
        if base_target(family) == wanted:
            return family.split(":", 1)[0].strip()
    return given


def device_owner(name: str) -> str:
    """The target whose device package carries `name`'s payload (SPEC §2, grouped by owner):
    the target itself, unless the owner table (TARGET_OWNERS, from the packager's
    `target_owners.json`) says otherwise: `gfx1250-strict` -> `gfx1250`."""
    base = base_target(name)
    if base in TARGET_OWNERS:
        return TARGET_OWNERS[base]
    return target_spelling(name)


def target_identifier(name: str) -> str:
    """A family or target as it appears in Python identifiers: `gfx110X-all` -> `gfx110x_all`."""
    return re.sub(r"[^0-9a-z]", "_", base_target(name))


def target_dist_segment(name: str) -> str:
    """A family or target as it appears in distribution names, and so in platform
    directories: TheRock's spelling, as the reference keeps it (`gfx110X-all`, so
    `_rocm_sdk_libraries_gfx110X_all` exists where downstream code looks, SPEC §2)."""
    return re.sub(r"[-_.]+", "-", target_spelling(name))


class _CallableBool:
    """A bool that can also be called: the reference exposes `is_target_specific` as a
    property, our contract (SPEC §4) as a method; both spellings keep working."""

    __slots__ = ("_value",)

    def __init__(self, value: object) -> None:
        self._value = bool(value)

    def __bool__(self) -> bool:
        return self._value

    def __call__(self) -> bool:
        return self._value

    def __eq__(self, other: object) -> bool:
        return bool(other) == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return repr(self._value)


class PackageEntry:
    """A package of the distribution (SPEC §2 package table).

    `dist_package_template` contains `{target_family}` when the package is GPU target
    specific. `pure_py_package_name` likewise (legacy libraries carry the family in the
    import name too). `platform_of` names another logical package whose platform directory
    this one overlays (device wheels overlay the libraries directory). `by_owner`: one
    package per owner of the targets, not per target (device wheels, SPEC §2). `built`:
    whether this build makes the package at all; a legacy build defines `device` as the
    reference does (downstream code reads `ALL_PACKAGES["device"]`) but has no device wheels.
    """

    def __init__(
        self,
        logical_name: str,
        dist_package_template: str,
        *,
        pure_py_package_name: Optional[str],
        required: bool = False,
        platform_of: Optional[str] = None,
        by_owner: bool = False,
        built: bool = True,
    ) -> None:
        self.logical_name = logical_name
        self.dist_package_template = dist_package_template
        self.pure_py_package_name = pure_py_package_name
        self.required = required
        self.platform_of = platform_of
        self.by_owner = by_owner
        self.built = built
        # Kept for code written against the reference.
        self.template_directory = dist_package_template.replace("-{target_family}", "")

    @property
    def is_target_specific(self) -> _CallableBool:
        return _CallableBool("{target_family}" in self.dist_package_template)

    def _require_family(self, target_family: Optional[str]) -> str:
        if not target_family:
            raise ValueError("package %s is target specific, but no target family was given" % self.logical_name)
        return target_family

    def get_dist_package_name(self, target_family: Optional[str] = None) -> str:
        if not self.is_target_specific:
            return self.dist_package_template
        family = self._require_family(target_family)
        if self.by_owner:
            family = device_owner(family)
        return self.dist_package_template.replace("{target_family}", target_dist_segment(family))

    def get_dist_package_require(self, target_family: Optional[str] = None) -> str:
        return self.get_dist_package_name(target_family) + "==" + __version__

    def get_pure_py_package_name(self, target_family: Optional[str] = None) -> Optional[str]:
        """The importable pure Python package, or None (device wheels have none)."""
        if self.pure_py_package_name is None:
            return None
        if "{target_family}" not in self.pure_py_package_name:
            return self.pure_py_package_name
        family = self._require_family(target_family)
        return self.pure_py_package_name.replace("{target_family}", target_identifier(family))

    def get_py_package_name(self, target_family: Optional[str] = None) -> str:
        """The platform package directory in site-packages holding this package's files."""
        if self.platform_of is not None:
            return ALL_PACKAGES[self.platform_of].get_py_package_name(target_family)
        dist_name = self.get_dist_package_name(target_family)
        return "_" + re.sub(r"[-.]", "_", dist_name) + PY_PACKAGE_SUFFIX_NONCE

    def get_py_package(self, target_family: Optional[str] = None) -> Optional[importlib.machinery.ModuleSpec]:
        return importlib.util.find_spec(self.get_py_package_name(target_family))

    def has_py_package(self, target_family: Optional[str] = None) -> bool:
        return self.get_py_package(target_family) is not None

    def is_installed(self, target_family: Optional[str] = None) -> bool:
        """Whether this package (of `target_family`) is installed in this environment.

        Cheap enough for every lookup: a pure package is found on `sys.path` the way
        `import` would find it, without importing it (the devel platform directory exists
        only once expanded, its pure package from the install on). Device wheels have no
        pure package: their distribution metadata says.
        """
        pure_name = self.get_pure_py_package_name(target_family)
        if pure_name is not None:
            return importlib.util.find_spec(pure_name) is not None
        return installed_dist_version(self.get_dist_package_name(target_family)) is not None

    def __repr__(self) -> str:
        return self.dist_package_template


class LibraryEntry:
    """A public library that `rocm_sdk.find_libraries` locates by short name (SPEC §4)."""

    def __init__(
        self,
        shortname: str,
        package_name: str,
        so_pattern: str,
        posix_relpath: str = "lib",
        *,
        dll_name: str = "",
        optional: bool = False,
        deps: Iterable[str] = (),
    ) -> None:
        self.shortname = shortname
        self.package = ALL_PACKAGES[package_name]
        self.so_pattern = so_pattern
        self.posix_relpath = posix_relpath
        # The DLL's name as the build spells it, without `lib`, version or `.dll`; empty
        # for a library a Windows build does not have (SPEC §7).
        self.dll_name = dll_name
        # The reference's glob, kept for code that reads this table: it finds both
        # spellings real builds use, and neighbours too, which `is_dll` then refuses.
        self.dll_pattern = "*%s*.dll" % dll_name if dll_name else ""
        self._dll_re = (
            re.compile(r"(?:lib)?%s(?:[-_.]?[0-9][0-9._-]*)?\.dll" % re.escape(dll_name), re.IGNORECASE)
            if dll_name
            else None
        )
        self.windows_relpath = "bin"
        self.optional = optional
        self.deps = list(deps)

    def is_dll(self, file_name: str) -> bool:
        """Whether `file_name` is this library's DLL on Windows. Builds spell a DLL with or
        without `lib` (HIP SDK ships `libhipblas.dll`, TheRock has shipped `hipblas.dll`)
        and may add a version (`amdhip64_7.dll`, `hiprtc0702.dll`); a neighbour whose name
        merely starts with ours (`libhipblaslt.dll`, `hiprtc-builtins0702.dll`) is not it.
        Windows file names are case-insensitive, so the match is too."""
        return self._dll_re is not None and self._dll_re.fullmatch(file_name) is not None

    def __repr__(self) -> str:
        return "%s(so_pattern=%s, package=%s)" % (self.shortname, self.so_pattern, self.package)


def _offload_arch_candidates() -> list[str]:
    """Core's own `offload-arch`, then one on PATH, then the environment's scripts dir."""
    found = []
    core = ALL_PACKAGES["core"].get_py_package()
    if core is not None and core.origin is not None:
        candidate = os.path.join(os.path.dirname(core.origin), "lib", "llvm", "bin", "offload-arch")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            found.append(candidate)
    on_path = shutil.which("offload-arch")
    if on_path:
        found.append(on_path)
    for directory in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        if not directory:
            continue
        candidate = os.path.join(directory, "offload-arch")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK) and candidate not in found:
            found.append(candidate)
    return found


def match_target_family(requested: str, available: Optional[Sequence[str]] = None) -> Optional[str]:
    """The available family that `requested` names, or None.

    Targets are compared by base ISA, case-insensitively (SPEC §6): `gfx90a`, `GFX90A`
    and `gfx90a:xnack-` all name `gfx90a`. In a kpack-split build a target not on offer
    itself selects another with the same owner (SPEC §2): a `gfx1250` GPU and a build of
    `gfx1250-strict` only share the `gfx1250` device package.
    """
    if available is None:
        available = AVAILABLE_TARGET_FAMILIES
    wanted = base_target(requested)
    for family in available:
        if base_target(family) == wanted:
            return family
    if KPACK_SPLIT:
        for family in available:
            if device_owner(family) == device_owner(wanted):
                return family
    return None


def family_for_gpu(reported: str, available: Optional[Sequence[str]] = None) -> Optional[str]:
    """Maps one `offload-arch` line (`gfx1100`, `gfx90a:xnack-`) to an available family."""
    if available is None:
        available = AVAILABLE_TARGET_FAMILIES
    target = base_target(reported)
    if not target.startswith("gfx") or len(target) < 4:
        return None
    family_stem = target[:-1] + "x"
    for suffix in FAMILY_SUFFIXES:
        match = match_target_family(family_stem + suffix, available)
        if match is not None:
            return match
    return match_target_family(target, available)


def discover_current_target_family(available: Optional[Sequence[str]] = None) -> Optional[str]:
    """The family (of `available`, default all on offer) of the first GPU `offload-arch`
    reports that has one, or None."""
    for executable in _offload_arch_candidates():
        try:
            output = subprocess.run(
                [executable],
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as error:
            _log("cannot run %s: %s" % (executable, error))
            continue
        if output.returncode != 0:
            _log("%s exited with %d" % (executable, output.returncode))
            continue
        for reported in output.stdout.decode("utf-8", "replace").splitlines():
            line = reported.strip()
            if not line:
                continue
            family = family_for_gpu(line, available)
            if family is not None:
                _log("offload-arch reported %s: using %s" % (line, family))
                return family
        return None
    return None


# (family, source): the family is None only for a distribution with no target families.
FamilyChoice = tuple[Optional[str], str]


def resolve_target_family() -> FamilyChoice:
    """(family, source) where nothing is installed yet: `ROCM_SDK_TARGET_FAMILY`, else
    the GPU `offload-arch` reports, else the default. The `rocm` sdist's backend asks the
    KFD topology between the environment and this rule's `offload-arch` (SPEC §3,
    `select_target_families` there); at run time see `resolve_runtime_target_family`.

    Raises TargetFamilyError naming the available families when the environment names one
    that this distribution does not have. The family is None only for a distribution that
    has no target families at all.
    """
    requested = os.environ.get("ROCM_SDK_TARGET_FAMILY", "").strip()
    if requested:
        family = match_target_family(requested)
        if family is None:
            raise TargetFamilyError(
                "ROCM_SDK_TARGET_FAMILY=%s is not available in this distribution (available: %s)"
                % (printable(requested), ", ".join(AVAILABLE_TARGET_FAMILIES) or "none")
            )
        return family, SOURCE_ENVIRONMENT
    detected = discover_current_target_family()
    if detected is not None:
        return detected, SOURCE_DETECTED
    return DEFAULT_TARGET_FAMILY, SOURCE_DEFAULT


def installed_target_families() -> list[str]:
    """The families whose target-specific packages are installed here, in the order of
    AVAILABLE_TARGET_FAMILIES: legacy libraries and devel wheels, kpack-split device wheels.
    Targets sharing one installed package (one owner, SPEC §2) count once, as the first."""
    specific = [entry for entry in ALL_PACKAGES.values() if entry.built and entry.is_target_specific]
    found = []
    packages: set[tuple[str, ...]] = set()
    for family in AVAILABLE_TARGET_FAMILIES:
        names = tuple(entry.get_dist_package_name(family) for entry in specific if entry.is_installed(family))
        if names and names not in packages:
            packages.add(names)
            found.append(family)
    return found


def resolve_runtime_target_family() -> FamilyChoice:
    """(family, source) at run time (SPEC §4): `ROCM_SDK_TARGET_FAMILY`, else the family
    whose target-specific packages are installed (one installed: that one; several: the
    detected GPU's among them, and in a kpack-split build without one the first of them),
    else a detected GPU, else the default.

    The choice made at install time holds without the variable: a non-default family
    installed with it set is the family in every later process. Raises TargetFamilyError
    when the variable names a family not on offer or, when some are installed, not
    installed (naming those that are), and when several legacy families are installed and
    no GPU picks one.
    """
    installed = installed_target_families()
    requested = os.environ.get("ROCM_SDK_TARGET_FAMILY", "").strip()
    if requested:
        if installed and match_target_family(requested, installed) is None:
            raise TargetFamilyError(
                "ROCM_SDK_TARGET_FAMILY=%s is not installed in this environment (installed: %s); "
                "set it to one of those, or unset it" % (printable(requested), ", ".join(installed))
            )
        return resolve_target_family()
    if len(installed) == 1:
        return installed[0], SOURCE_INSTALLED
    if installed:
        detected = discover_current_target_family(installed)
        if detected is not None:
            return detected, SOURCE_DETECTED
        if KPACK_SPLIT:
            # Device wheels only add code objects to one arch-neutral libraries package, so
            # no library is found in the wrong place whichever is taken: the first, as the
            # reference takes a family without ever raising (downstream code calls this).
            return installed[0], SOURCE_INSTALLED
        raise TargetFamilyError(
            "several ROCm target families are installed in this environment (%s) and no GPU of "
            "this machine selects one of them; set ROCM_SDK_TARGET_FAMILY to the one to use" % ", ".join(installed)
        )
    return resolve_target_family()


def determine_target_family() -> Optional[str]:
    """The target family of this process (cached): see `resolve_runtime_target_family`.

    Every lookup of a target-specific package goes through here, so `find_libraries`,
    `preload_libraries`, `initialize_process` and `rocm-sdk` agree with it.
    """
    global CACHED_TARGET_FAMILY
    if CACHED_TARGET_FAMILY is None:
        CACHED_TARGET_FAMILY = resolve_runtime_target_family()[0]
    return CACHED_TARGET_FAMILY


def installed_dist_version(dist_name: str) -> Optional[str]:
    """The installed version of a distribution, or None."""
    import importlib.metadata

    try:
        return importlib.metadata.version(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return None


# A version in normal form: epoch, release, pre release (kind, number), post, dev, local.
_VERSION = re.compile(
    r"^(?:([0-9]+)!)?([0-9]+(?:\.[0-9]+)*)(?:(a|b|rc)([0-9]+))?(?:\.post([0-9]+))?(?:\.dev([0-9]+))?(?:\+([a-z0-9.]+))?$"
)


def final_release(version: str) -> Optional[str]:
    """`7.12.0.post1` and `7.12.0` -> `7.12.0`; None for a dev, pre or local version,
    which its pins name exactly (`_release.release_admits` reads what they admit)."""
    match = _VERSION.match(version)
    if match is None or any(match.group(n) for n in (3, 6, 7)):
        return None
    return (match.group(1) + "!" if match.group(1) else "") + match.group(2)


def release_specifier(version: Optional[str] = None) -> str:
    """The specifier a package of a set pins another with (SPEC §2): `>=R,<R.0.1` for a
    final release R or R.postN, so a package republished as `R.postN` joins a set of `R`;
    `==V` for any other version."""
    version = __version__ if version is None else version
    release = final_release(version)
    return "==" + version if release is None else ">=%s,<%s.0.1" % (release, release)


def _package_table() -> dict[str, PackageEntry]:
    """The package table of this build (SPEC §2), by logical name, in the reference's order."""
    device = PackageEntry(
        "device",
        "rocm-sdk-device-{target_family}",
        pure_py_package_name=None,
        # Kpack-split: device wheels overlay the libraries platform directory. Legacy: the
        # key exists as the reference defines it, but no such wheel is made (SPEC §4,
        # downstream API).
        platform_of="libraries" if KPACK_SPLIT else None,
        by_owner=True,
        built=KPACK_SPLIT,
    )
    if KPACK_SPLIT:
        libraries = PackageEntry("libraries", "rocm-sdk-libraries", pure_py_package_name="rocm_sdk_libraries")
    else:
        libraries = PackageEntry(
            "libraries",
            "rocm-sdk-libraries-{target_family}",
            pure_py_package_name="rocm_sdk_libraries_{target_family}",
        )
    if DEVEL_TARGET_SPECIFIC:
        devel = PackageEntry(
            "devel", "rocm-sdk-devel-{target_family}", pure_py_package_name="rocm_sdk_devel_{target_family}"
        )
    else:
        devel = PackageEntry("devel", "rocm-sdk-devel", pure_py_package_name="rocm_sdk_devel")
    entries = [
        PackageEntry("meta", "rocm", pure_py_package_name="rocm_sdk", required=True),
        PackageEntry("core", "rocm-sdk-core", pure_py_package_name="rocm_sdk_core", required=True),
        libraries,
        device,
        devel,
        PackageEntry("profiler", "rocm-profiler", pure_py_package_name="rocm_profiler"),
    ]
    return {entry.logical_name: entry for entry in entries}


# The libraries TheRock builds for Windows too (the reference's table names their DLLs).
_WINDOWS_LIBRARIES = ("hipblas", "hipblaslt", "hipfft", "hiprand", "hipsparse", "hipsolver")


def _library_table() -> dict[str, LibraryEntry]:
    """The library table (SPEC §4): shortname, package, posix glob, directory."""
    entries = [
        LibraryEntry("amdhip64", "core", "libamdhip64.so*", dll_name="amdhip64"),
        LibraryEntry("hipfile", "core", "libhipfile.so*"),
        LibraryEntry("hiprtc", "core", "libhiprtc.so*", dll_name="hiprtc"),
        LibraryEntry("roctx64", "core", "libroctx64.so*"),
        LibraryEntry("rocprofiler-sdk", "core", "librocprofiler-sdk.so*"),
        LibraryEntry("rocprofiler-sdk-roctx", "core", "librocprofiler-sdk-roctx.so*"),
        LibraryEntry("roctracer64", "core", "libroctracer64.so*"),
        LibraryEntry("rocm_sysdeps_liblzma", "core", "librocm_sysdeps_liblzma.so.*", "lib/rocm_sysdeps/lib"),
        LibraryEntry("rocm-openblas", "core", "librocm-openblas.so.*", "lib/host-math/lib", dll_name="rocm-openblas"),
        LibraryEntry("amd_comgr", "core", "libamd_comgr.so*", dll_name="amd_comgr"),
        LibraryEntry("rocm_kpack", "core", "librocm_kpack.so*", dll_name="rocm_kpack"),
        LibraryEntry("rocm_smi64", "core", "librocm_smi64.so*"),
        LibraryEntry("rocdecode", "core", "librocdecode.so*"),
        LibraryEntry("rocjpeg", "core", "librocjpeg.so*"),
        LibraryEntry("amd_smi", "core", "libamd_smi.so*"),
        LibraryEntry("rocdxg", "core", "librocdxg*.so*", optional=True),
        LibraryEntry("rpp", "libraries", "librpp.so*"),
    ]
    for name in ("hipblas", "hipblaslt", "hipfft", "hiprand", "hipsparse", "hipsparselt", "hipsolver", "rccl"):
        dll_name = name if name in _WINDOWS_LIBRARIES else ""
        entries.append(LibraryEntry(name, "libraries", "lib%s.so*" % name, dll_name=dll_name))
    entries += [
        LibraryEntry("miopen", "libraries", "libMIOpen.so*", dll_name="MIOpen"),
        LibraryEntry("origami", "libraries", "liborigami.so*", dll_name="origami"),
        LibraryEntry("hipdnn", "libraries", "libhipdnn_backend.so*", dll_name="hipdnn_backend"),
    ]
    return {entry.shortname: entry for entry in entries}


# The tables, each built once, when this module is first imported. The library table
# refers to the package table, so the packages come first.
ALL_PACKAGES: dict[str, PackageEntry] = _package_table()
ALL_LIBRARIES: dict[str, LibraryEntry] = _library_table()

# The entry of the package this copy of `_dist_info.py` ships in (None for a device module).
THIS_PACKAGE_ENTRY: Optional[PackageEntry] = ALL_PACKAGES.get(THIS_PACKAGE_LOGICAL_NAME)
