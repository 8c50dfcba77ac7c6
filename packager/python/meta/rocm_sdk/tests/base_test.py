"""The `rocm` package itself: API, command line, versions of everything installed."""

import importlib
import importlib.util
import os
import re
import subprocess
import sys
import unittest

import rocm_sdk

from .. import _dist_info as di
from .. import _release
from . import utils


class BaseTest(unittest.TestCase):
    def test_rocm_sdk_is_a_regular_package(self) -> None:
        utils.assert_is_physical_package(rocm_sdk)

    def test_version_is_the_distribution_version(self) -> None:
        self.assertEqual(rocm_sdk.__version__, di.__version__)
        installed = di.installed_dist_version("rocm")
        if installed is not None:
            self.assertEqual(installed, rocm_sdk.__version__)

    def test_installed_rocm_packages_share_one_version(self) -> None:
        # One release: a package republished as a post release belongs to it (SPEC §4).
        for name, version in sorted(utils.installed_versions().items()):
            with self.subTest(distribution=name):
                self.assertTrue(
                    _release.release_admits(di.__version__, version),
                    "%s is %s, not %s" % (name, version, di.__version__),
                )

    def test_installed_pure_packages_agree_on_dist_info(self) -> None:
        for entry in di.ALL_PACKAGES.values():
            families = di.AVAILABLE_TARGET_FAMILIES if entry.is_target_specific else [None]
            for family in families:
                name = entry.get_pure_py_package_name(family)
                if name is None or importlib.util.find_spec(name) is None:
                    continue
                with self.subTest(package=name):
                    other = importlib.import_module(name + "._dist_info")
                    self.assertTrue(_release.release_admits(di.__version__, other.__version__), other.__version__)
                    self.assertEqual(other.AVAILABLE_TARGET_FAMILIES, di.AVAILABLE_TARGET_FAMILIES)
                    self.assertEqual(other.PY_PACKAGE_SUFFIX_NONCE, di.PY_PACKAGE_SUFFIX_NONCE)

    def test_cli_version(self) -> None:
        output = subprocess.check_output([sys.executable, "-m", "rocm_sdk", "version"])
        self.assertEqual(output.decode().strip(), di.__version__)

    def test_unknown_library_is_module_not_found(self) -> None:
        with self.assertRaises(ModuleNotFoundError):
            rocm_sdk.find_libraries("no-such-rocm-library")

    def test_initialize_process_checks_the_version(self) -> None:
        env = dict(os.environ)
        env.pop("ROCM_SDK_PRELOAD_LIBRARIES", None)
        code = (
            "import rocm_sdk, re, warnings\n"
            "rocm_sdk.initialize_process(check_version=rocm_sdk.__version__, fail_on_version_mismatch=True)\n"
            "rocm_sdk.initialize_process(check_version=re.compile('.*'), fail_on_version_mismatch=True)\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    rocm_sdk.initialize_process(check_version='0.0.0-not-this')\n"
            "assert len(caught) == 1, caught\n"
        )
        returncode, _, stderr = utils.python_in_subprocess(code, env)
        self.assertEqual(returncode, 0, stderr)

    # The reference's own test modules match on these words (SPEC §4).
    MISMATCH = "The program was compiled against a ROCm version matching"

    def test_initialize_process_check_version_mismatch(self) -> None:
        with self.assertRaisesRegex(RuntimeError, "^" + self.MISMATCH + " 'badversion' but the installed"):
            rocm_sdk.initialize_process(
                preload_shortnames=[], env_override=False, check_version="badversion", fail_on_version_mismatch=True
            )

    def test_initialize_process_check_version_mismatch_warning(self) -> None:
        with self.assertWarnsRegex(UserWarning, "^" + self.MISMATCH + " 'badversion' but the installed"):
            rocm_sdk.initialize_process(preload_shortnames=[], env_override=False, check_version="badversion")

    def test_target_family_is_available(self) -> None:
        installed = di.installed_target_families()
        try:
            family = di.determine_target_family()
        except di.TargetFamilyError as error:
            # Several installed (kpack-split: device wheels of several targets) and no GPU
            # picks one: only an error naming them all is right (SPEC §4). Nothing this
            # build looks up needs a family then, or `rocm-sdk test` would have stopped.
            self.assertGreater(len(installed), 1, str(error))
            for name in installed:
                self.assertIn(name, str(error))
            return
        if di.AVAILABLE_TARGET_FAMILIES:
            self.assertIn(family, di.AVAILABLE_TARGET_FAMILIES)
            assert family is not None
            self.assertTrue(re.match(r"^[0-9A-Za-z_.+-]+$", family), family)
        if installed:
            # What was installed is the family from then on (SPEC §4).
            self.assertIn(family, installed)
