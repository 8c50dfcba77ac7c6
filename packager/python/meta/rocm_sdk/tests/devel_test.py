"""rocm-sdk-devel: the expanded tree is complete, recorded, safe, and has the device links."""

import os
import subprocess
import sys
import unittest
from pathlib import Path

import rocm_sdk

from .. import _devel, _device_links
from .. import _dist_info as di
from .._devel_tree import COMPILER_DRIVERS
from . import utils


def _tree_entries(root: Path) -> list[str]:
    """Relpaths (from site-packages) of every file and symlink in the devel tree."""
    site = root.parent
    entries = []
    for directory, subdirectories, files in os.walk(str(root)):
        for name in files + [d for d in subdirectories if os.path.islink(os.path.join(directory, d))]:
            entries.append(Path(directory, name).relative_to(site).as_posix())
    return sorted(entries)


class DevelTest(unittest.TestCase):
    root: Path
    devel: _devel.DevelPackage

    @classmethod
    def setUpClass(cls) -> None:
        cls.root = _devel.get_devel_root()
        cls.devel = _devel.find_devel_package()

    def test_tree_is_expanded_beside_the_other_packages(self) -> None:
        self.assertTrue(self.devel.is_expanded())
        self.assertIsNone(self.devel.tarball(), "the devel tarball is still there")
        self.assertTrue((self.root / "__init__.py").is_file())
        self.assertEqual(self.root.parent, Path(rocm_sdk.__file__).parent.parent)

    def test_every_recorded_path_exists(self) -> None:
        for path in utils.dist_files(self.devel.dist_name):
            if path.name.startswith("_devel.tar"):
                continue  # Deleted after expansion, by design.
            with self.subTest(path=str(path)):
                self.assertTrue(os.path.lexists(str(path)))

    def test_every_tree_entry_is_recorded(self) -> None:
        def normal(path: Path) -> str:
            return os.path.normpath(str(path))

        recorded = {normal(path) for path in utils.dist_files(self.devel.dist_name)}
        device = di.ALL_PACKAGES["device"]
        for family in di.AVAILABLE_TARGET_FAMILIES if device.built else ():
            name = device.get_dist_package_name(family)
            if di.installed_dist_version(name) is not None:
                recorded |= {normal(path) for path in utils.dist_files(name)}
        site = self.root.parent
        missing = [
            entry
            for entry in _tree_entries(self.root)
            if "__pycache__" not in entry and normal(site / entry) not in recorded
        ]
        self.assertEqual(missing, [], "pip uninstall would leave these behind")

    def test_only_directories_and_compiler_drivers_stay_symlinks(self) -> None:
        site = os.path.realpath(str(self.root.parent))
        for directory, subdirectories, files in os.walk(str(self.root)):
            for name in files + subdirectories:
                path = os.path.join(directory, name)
                if not os.path.islink(path):
                    continue
                with self.subTest(path=path):
                    target = os.path.realpath(path)
                    self.assertTrue(target.startswith(site + os.sep), "%s leaves site-packages" % path)
                    if os.path.isfile(target):
                        self.assertIn(name, COMPILER_DRIVERS, "file symlink %s was not made a hard link" % path)

    def test_device_links_are_in_place(self) -> None:
        if not di.ALL_PACKAGES["device"].built:
            self.skipTest("not a kpack-split build: no device wheels")
        self.assertEqual(_device_links.reconcile(self.devel), 0, "device links were not already in place")

    def test_cli_paths(self) -> None:
        for flag, expected in (
            ("--root", self.root),
            ("--bin", self.root / "bin"),
            ("--cmake", self.root / "lib" / "cmake"),
        ):
            with self.subTest(flag=flag):
                output = subprocess.check_output([sys.executable, "-m", "rocm_sdk", "path", flag])
                self.assertEqual(Path(output.decode().strip()), expected)
