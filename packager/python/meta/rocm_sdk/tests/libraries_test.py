"""rocm-sdk-libraries (and, in kpack-split builds, the device wheels)."""

import json
import unittest
from pathlib import Path

import rocm_sdk

from .. import _dist_info as di
from .. import _release
from . import utils

LIBRARIES = di.ALL_PACKAGES["libraries"]
FAMILY = di.determine_target_family() if LIBRARIES.is_target_specific else None


class LibrariesTest(unittest.TestCase):
    def test_packages_are_regular_siblings(self) -> None:
        platform = utils.import_platform_package("libraries", FAMILY)
        pure = utils.import_pure_package("libraries", FAMILY)
        for module in (platform, pure):
            utils.assert_is_physical_package(module)
        sdk_site = Path(rocm_sdk.__file__).parent.parent
        self.assertEqual(utils.package_dir(platform).parent, sdk_site)
        self.assertEqual(utils.package_dir(pure).parent, sdk_site)

    def test_shared_libraries_load(self) -> None:
        root = utils.package_dir(utils.import_platform_package("libraries", FAMILY))
        utils.check_libraries_load(self, root)

    def test_libraries_preload(self) -> None:
        for entry in di.ALL_LIBRARIES.values():
            if entry.package is not LIBRARIES:
                continue
            with self.subTest(library=entry.shortname):
                code = "import rocm_sdk; rocm_sdk.preload_libraries(%r)" % entry.shortname
                returncode, _, stderr = utils.python_in_subprocess(code)
                self.assertEqual(returncode, 0, stderr)

    def test_installed_device_wheels_are_complete(self) -> None:
        if not di.ALL_PACKAGES["device"].built:
            self.skipTest("not a kpack-split build: no device wheels")
        device = di.ALL_PACKAGES["device"]
        libraries_dir = utils.package_dir(utils.import_platform_package("libraries"))
        # A device wheel must never own (and so remove) the libraries package's files.
        self.assertTrue((libraries_dir / "__init__.py").is_file())
        # One device wheel per owner of the targets on offer (SPEC §2).
        for owner in sorted({di.device_owner(target) for target in di.AVAILABLE_TARGET_FAMILIES}):
            name = device.get_dist_package_name(owner)
            version = di.installed_dist_version(name)
            if version is None:
                continue
            with self.subTest(device=name):
                self.assertTrue(_release.release_admits(di.__version__, version), "%s is %s" % (name, version))
                links = libraries_dir / ".devel_links" / (owner + ".json")
                self.assertTrue(links.is_file(), "%s has no %s" % (name, links))
                with open(links, encoding="utf-8") as file:
                    data = json.load(file)
                self.assertIsInstance(data.get("links"), list)
                for path in utils.dist_files(name):
                    self.assertTrue(path.exists() or path.is_symlink(), "%s lists a missing %s" % (name, path))
