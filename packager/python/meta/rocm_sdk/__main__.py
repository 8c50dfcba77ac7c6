"""The `rocm-sdk` command (also `python -m rocm_sdk`), SPEC §4."""

import argparse
import importlib
import importlib.util
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Optional

from . import _dist_info as di
from ._devel_tree import UnsafeTarballError

DESCRIPTION = """\
Inspect and check the ROCm SDK installed in this Python environment.

Typical use after `pip install "rocm[libraries,devel]"`:
  rocm-sdk test              check that the installation works
  rocm-sdk path --cmake      the directory to add to CMAKE_PREFIX_PATH
  rocm-sdk path --bin        the directory holding hipcc, amdclang and friends
  rocm-sdk doctor            what this machine's GPUs still need, with the pip line
"""


def _fail(message: str, hint: Optional[str] = None) -> int:
    # Control characters from the environment or file names are escaped, as the packager
    # escapes them: a message cannot rewrite the terminal.
    print("error: " + di.printable(message, keep_newlines=True), file=sys.stderr)
    if hint:
        print("\nhint: " + di.printable(hint, keep_newlines=True), file=sys.stderr)
    return 1


def _devel_root() -> Path:
    from . import _devel

    return _devel.get_devel_root()


def _do_path(args: argparse.Namespace) -> int:
    try:
        root = _devel_root()
    except ModuleNotFoundError as error:
        return _fail(str(error))
    except (ValueError, RuntimeError, OSError, UnsafeTarballError) as error:
        return _fail(str(error))
    if args.cmake:
        print(root / "lib" / "cmake")
    elif args.bin:
        print(root / "bin")
    else:
        print(root)
    return 0


def _do_init(args: argparse.Namespace) -> int:
    try:
        root = _devel_root()
    except ModuleNotFoundError as error:
        return _fail(str(error))
    except (ValueError, RuntimeError, OSError, UnsafeTarballError) as error:
        return _fail(str(error))
    if not args.quiet:
        print("ROCm development tree ready at %s" % root)
    return 0


def _do_version(args: argparse.Namespace) -> int:
    del args
    print(di.__version__)
    return 0


def _do_targets(args: argparse.Namespace) -> int:
    del args
    core_name = di.ALL_PACKAGES["core"].get_py_package_name()
    spec = importlib.util.find_spec(core_name)
    if spec is None or spec.origin is None:
        return _fail("the ROCm core package (rocm-sdk-core) is not installed", "pip install --force-reinstall rocm")
    path = Path(spec.origin).parent / "share" / "therock" / "dist_info.json"
    try:
        with open(path, encoding="utf-8") as file:
            targets = json.load(file)["dist_amdgpu_targets"]
    except (OSError, ValueError, KeyError) as error:
        return _fail("cannot read the GPU targets from %s: %s" % (path, error))
    print(targets)
    return 0


def _do_doctor(args: argparse.Namespace) -> int:
    from . import _doctor

    return _doctor.run(as_json=args.json)


def test_module_names() -> tuple[list[str], list[str]]:
    """The `rocm_sdk.tests` modules that apply to what is installed, and notes on those
    left out.

    Raises the TargetFamilyError (a ValueError) of `determine_target_family` when a
    target-specific package is looked up and no family can be chosen: the tests would
    only fail on it one by one.
    """
    names = ["rocm_sdk.tests.base_test", "rocm_sdk.tests.core_test"]
    notes = []
    libraries = di.ALL_PACKAGES["libraries"]
    family = di.determine_target_family() if libraries.is_target_specific else None
    if (family is not None or not libraries.is_target_specific) and libraries.has_py_package(family):
        names.append("rocm_sdk.tests.libraries_test")
    else:
        notes.append("NOTE: skipping the libraries tests (rocm[libraries] is not installed for this GPU)")
    try:
        from . import _devel

        _devel.find_devel_package()
        names.append("rocm_sdk.tests.devel_test")
    except ModuleNotFoundError:
        notes.append("NOTE: skipping the devel tests (rocm[devel] is not installed)")
    if di.ALL_PACKAGES["profiler"].has_py_package():
        names.append("rocm_sdk.tests.profiler_test")
    else:
        if sys.platform == "win32":
            notes.append("NOTE: skipping the profiler tests (the ROCm profiler is Linux-only)")
        else:
            notes.append("NOTE: skipping the profiler tests (rocm[profiler] is not installed)")
    return names, notes


def _do_test(args: argparse.Namespace) -> int:
    import unittest

    try:
        names, notes = test_module_names()
    except ValueError as error:
        return _fail(str(error))
    for note in notes:
        print(note)
    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    for name in names:
        suite.addTests(loader.loadTestsFromName(name))
    for load_error in loader.errors:
        # A formatted traceback (typeshed calls it an exception type).
        print("error while loading the tests:\n" + str(load_error), file=sys.stderr)
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=args.verbosity).run(suite)
    return 0 if result.wasSuccessful() and not loader.errors else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rocm-sdk",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    path = commands.add_parser(
        "path",
        help="print a directory of the ROCm development tree (needs rocm[devel])",
        description="Print a directory of the ROCm development tree. The tree is unpacked "
        "into site-packages the first time it is needed.",
    )
    which = path.add_mutually_exclusive_group(required=True)
    which.add_argument("--cmake", action="store_true", help="the CMake package directory (for CMAKE_PREFIX_PATH)")
    which.add_argument("--bin", action="store_true", help="the directory of the tools (hipcc, amdclang, ...)")
    which.add_argument("--root", action="store_true", help="the root of the tree (for ROCM_HOME / ROCM_PATH)")
    path.set_defaults(func=_do_path)

    version = commands.add_parser("version", help="print the ROCm version installed here")
    version.set_defaults(func=_do_version)

    targets = commands.add_parser("targets", help="print the GPU targets this ROCm build supports")
    targets.set_defaults(func=_do_targets)

    init = commands.add_parser(
        "init",
        help="unpack the ROCm development tree now (needs rocm[devel])",
        description="Unpack the ROCm development tree into site-packages and link the "
        "installed device files into it. Safe to run at any time and from several "
        "processes at once; later runs do nothing.",
    )
    init.add_argument("--quiet", action="store_true", help="print nothing on success")
    init.set_defaults(func=_do_init)

    doctor = commands.add_parser(
        "doctor",
        help="say what this machine's GPUs still need from the installed ROCm packages",
        description="Find the GPUs of this machine in the KFD topology (as rocm_agent_enumerator "
        "does; ROCM_SDK_KFD_TOPOLOGY names another topology directory) and say, for each, its "
        "target, the package that carries its device code, whether it is installed, and the "
        "pip line that adds what is missing; the same for every installed package split into "
        "device wheels (its `device-<target>` extras, as `pip install 'torch[device-gfx1151]'` "
        "adds them); and whether the devel tree is expanded. Exits 0 when every GPU is "
        "covered, 1 otherwise.",
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor.set_defaults(func=_do_doctor)

    test = commands.add_parser(
        "test",
        help="check that the installed ROCm packages work",
        description="Run the bundled self-tests against the installed ROCm packages: "
        "layout, library loading, console scripts, devel tree, device files, versions.",
    )
    test.add_argument("-v", "--verbosity", type=int, default=2, help="unittest verbosity (default 2)")
    test.set_defaults(func=_do_test)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.command != "doctor":
        # `doctor` reports the same itself (SPEC §4).
        from . import _doctor

        _doctor.warn_on_stderr("rocm-sdk")
    command: Callable[[argparse.Namespace], int] = args.func
    return command(args)


if __name__ == "__main__":
    sys.exit(main())
