"""rocm-profiler: layout, libraries, console scripts."""

import unittest
from pathlib import Path

import rocm_sdk

from .. import _dist_info as di
from . import utils

PROFILER = di.ALL_PACKAGES["profiler"]


class ProfilerTest(unittest.TestCase):
    def test_packages_are_regular_siblings(self) -> None:
        platform = utils.import_platform_package("profiler")
        pure = utils.import_pure_package("profiler")
        sdk_site = Path(rocm_sdk.__file__).parent.parent
        for module in (platform, pure):
            utils.assert_is_physical_package(module)
            self.assertEqual(utils.package_dir(module).parent, sdk_site)

    def test_shared_libraries_load(self) -> None:
        utils.check_libraries_load(self, utils.package_dir(utils.import_platform_package("profiler")))

    def test_console_scripts_run(self) -> None:
        utils.check_console_scripts(self, PROFILER.get_dist_package_name())
