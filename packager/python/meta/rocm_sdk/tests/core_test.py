"""rocm-sdk-core: layout, libraries, console scripts."""

import unittest
from pathlib import Path

import rocm_sdk

from .. import _dist_info as di
from . import utils

CORE = di.ALL_PACKAGES["core"]


class CoreTest(unittest.TestCase):
    def test_packages_are_regular_siblings(self) -> None:
        platform = utils.import_platform_package("core")
        pure = utils.import_pure_package("core")
        for module in (rocm_sdk, platform, pure):
            utils.assert_is_physical_package(module)
        sdk_site = Path(rocm_sdk.__file__).parent.parent
        self.assertEqual(utils.package_dir(platform).parent, sdk_site, "core is not beside rocm_sdk")
        self.assertEqual(utils.package_dir(pure).parent, sdk_site, "rocm_sdk_core is not beside rocm_sdk")

    def test_shared_libraries_load(self) -> None:
        root = utils.package_dir(utils.import_platform_package("core"))
        libraries = utils.check_libraries_load(self, root)
        self.assertTrue(libraries, "the core package holds no shared libraries")

    def test_console_scripts_run(self) -> None:
        utils.check_console_scripts(self, CORE.get_dist_package_name())

    def test_core_libraries_preload(self) -> None:
        for entry in di.ALL_LIBRARIES.values():
            if entry.package is not CORE:
                continue
            with self.subTest(library=entry.shortname):
                code = "import rocm_sdk; rocm_sdk.preload_libraries(%r)" % entry.shortname
                returncode, _, stderr = utils.python_in_subprocess(code)
                self.assertEqual(returncode, 0, stderr)
