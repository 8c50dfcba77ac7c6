"""Device packages grouped by owner (SPEC §2, §3): the owner table as `_dist_info_data.py` gets
it, one test per entry, and what it changes in names, matching and the sdist's extras."""

import json
import unittest

from tests import support
from tests.test_backend import BackendSupport


class OwnerTableTest(unittest.TestCase):
    def test_every_entry_has_its_own_test(self) -> None:
        # A new entry of target_owners.json fails here until it has a test below.
        self.assertEqual(sorted(support.TARGET_OWNERS), ["gfx1250-strict"])

    def test_gfx1250_strict_ships_in_the_gfx1250_package(self) -> None:
        info = support.load_dist_info(families=["gfx1250", "gfx1250-strict"], kpack=True)
        self.assertEqual(info.TARGET_OWNERS, {"gfx1250-strict": "gfx1250"})
        for target in ("gfx1250-strict", "GFX1250-STRICT", "gfx1250-strict:xnack-", "gfx1250"):
            self.assertEqual(info.device_owner(target), "gfx1250", target)
        device = info.ALL_PACKAGES["device"]
        self.assertEqual(device.get_dist_package_name("gfx1250-strict"), "rocm-sdk-device-gfx1250")
        self.assertEqual(device.get_dist_package_name("gfx1250"), "rocm-sdk-device-gfx1250")

    def test_other_targets_own_their_own_package(self) -> None:
        info = support.load_dist_info(families=["gfx90a", "gfx1151"], kpack=True)
        for target in ("gfx90a", "gfx90a:xnack+", "gfx1151", "gfx942"):
            self.assertEqual(info.device_owner(target), info.base_target(target))


class OwnerMatchingTest(unittest.TestCase):
    def test_a_target_not_on_offer_selects_one_of_its_owner(self) -> None:
        strict_only = support.load_dist_info(families=["gfx1250-strict", "gfx90a"], kpack=True)
        self.assertEqual(strict_only.match_target_family("gfx1250"), "gfx1250-strict")
        self.assertEqual(strict_only.family_for_gpu("gfx1250"), "gfx1250-strict")
        both = support.load_dist_info(families=["gfx1250", "gfx1250-strict"], kpack=True)
        self.assertEqual(both.match_target_family("gfx1250-strict"), "gfx1250-strict", "the exact target first")
        self.assertEqual(both.match_target_family("gfx1250"), "gfx1250")

    def test_legacy_builds_do_not_merge_targets(self) -> None:
        legacy = support.load_dist_info(families=["gfx1250-strict"])
        self.assertIsNone(legacy.match_target_family("gfx1250"))
        libraries = legacy.ALL_PACKAGES["libraries"]
        self.assertEqual(libraries.get_dist_package_name("gfx1250-strict"), "rocm-sdk-libraries-gfx1250-strict")


# Which families count as installed, with the owner's device package installed.
INSTALLED = "from rocm_sdk import _dist_info as d; print(d.installed_target_families())"


class OwnerInstalledTest(support.TempDirTest):
    def test_targets_of_one_installed_package_count_once(self) -> None:
        site = support.make_site(self.tmp, families=["gfx1250", "gfx1250-strict", "gfx90a"], kpack=True)
        support.add_dist(site, "rocm-sdk-device-gfx1250", support.VERSION, [])
        result = support.run_python(INSTALLED, site=site, check=True)
        self.assertEqual(result.stdout.strip(), "['gfx1250']")


class OwnerExtrasTest(BackendSupport):
    def test_one_extra_per_owner_and_device_all_names_each_once(self) -> None:
        root = self.make_sdist_tree(families=["gfx1250", "gfx1250-strict", "gfx90a"], kpack=True)
        v = support.VERSION
        for family in ("gfx1250", "gfx1250-strict"):
            _, extras = self.call(root, "requirements", env={"ROCM_SDK_TARGET_FAMILY": family})
            self.assertEqual(extras["device"], ["rocm-sdk-device-gfx1250==" + v], family)
            self.assertEqual(
                sorted(k for k in extras if k.startswith("device-")), ["device-all", "device-gfx1250", "device-gfx90a"]
            )
            self.assertEqual(extras["device-all"], ["rocm-sdk-device-gfx1250==" + v, "rocm-sdk-device-gfx90a==" + v])

    def test_a_detected_gfx1250_selects_the_owner_in_a_strict_only_build(self) -> None:
        root = self.make_sdist_tree(families=["gfx1250-strict"], kpack=True)
        _, extras = self.call(root, "requirements", gpu="gfx1250")
        self.assertEqual(extras["device"], ["rocm-sdk-device-gfx1250==" + support.VERSION])
        self.assertEqual(
            json.dumps(sorted(extras)),
            json.dumps(["devel", "device", "device-all", "device-gfx1250", "libraries", "profiler"]),
        )

    def test_platform_markers_follow_the_owner(self) -> None:
        root = self.make_sdist_tree(
            families=["gfx1250", "gfx1250-strict", "gfx90a"],
            kpack=True,
            linux=["gfx1250-strict", "gfx90a"],
            windows=["gfx1250"],
        )
        _, extras = self.call(root, "requirements")
        self.assertEqual(extras["device-gfx1250"], ["rocm-sdk-device-gfx1250==" + support.VERSION])
        self.assertEqual(
            extras["device-gfx90a"], ['rocm-sdk-device-gfx90a==%s; sys_platform == "linux"' % support.VERSION]
        )
