"""`rocm-sdk doctor` and `initialize_process` on packages split into device wheels (SPEC §4,
§12): fake installs of a split package (`.dist-info` directories with the METADATA a split
host wheel carries, on `sys.path` as pip lays them out), with and without its device wheels,
on the recorded KFD topologies (`kfd_topologies/`)."""

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from tests import support
from tests.test_doctor import DOCTOR, Sites

# What `cargo xtask split` writes into the host's METADATA for the fixture's targets: one
# extra per target, the gfx11 family wheel required by every gfx11 target's extra.
HIPEXT_EXTRAS = [
    "Provides-Extra: device-gfx1030",
    'Requires-Dist: hipext-device-gfx1030==1.0; extra == "device-gfx1030"',
    "Provides-Extra: device-gfx1100",
    'Requires-Dist: hipext-device-gfx1100==1.0; extra == "device-gfx1100"',
    'Requires-Dist: hipext-device-gfx11xx==1.0; extra == "device-gfx1100"',
    "Provides-Extra: device-gfx90a",
    'Requires-Dist: hipext-device-gfx90a==1.0; extra == "device-gfx90a"',
    "Provides-Extra: device-all",
    'Requires-Dist: hipext-device-gfx1030==1.0; extra == "device-all"',
    'Requires-Dist: hipext-device-gfx1100==1.0; extra == "device-all"',
    'Requires-Dist: hipext-device-gfx11xx==1.0; extra == "device-all"',
    'Requires-Dist: hipext-device-gfx90a==1.0; extra == "device-all"',
]

# A host package that initialises ROCm the way TheRock's `_rocm_init.py` does.
ROCM_INIT = "import rocm_sdk\n\n\ndef initialize() -> None:\n    rocm_sdk.initialize_process()\n"


class SplitSites(Sites):
    """A site with the SDK (its device wheels for every GPU of the recorded topologies, so
    only the split package decides) and the split package `hipext`."""

    def split_site(
        self,
        devices: Sequence[str] = (),
        extras: Sequence[str] = tuple(HIPEXT_EXTRAS),
        device_version: str = "1.0",
        sdk_devices: Sequence[str] = ("gfx1030", "gfx90a", "gfx1151"),
    ) -> Path:
        site = self.site(
            ["gfx1030", "gfx1151", "gfx90a"], installed=["rocm-sdk-device-%s" % target for target in sdk_devices]
        )
        support.write(site / "hipext" / "__init__.py", "")
        support.write(site / "hipext" / "_rocm_init.py", ROCM_INIT)
        support.add_dist(site, "hipext", "1.0", ["hipext/__init__.py", "hipext/_rocm_init.py"], extras)
        for target in devices:
            support.add_dist(site, "hipext-device-%s" % target, device_version, [], ["Requires-Dist: hipext==1.0"])
        return site

    def topology(self, name: str, gfx_target_version: int) -> str:
        """A one-GPU topology written here (no recorded machine has that GPU)."""
        tree = self.tmp / "topologies" / name
        properties = "cpu_cores_count 0\nsimd_count 192\ngfx_target_version %d\n" % gfx_target_version
        support.write(tree / "nodes" / "1" / "properties", properties)
        return str(tree)

    def doctor_at(self, site: Path, topology: str, *args: str) -> support.Completed:
        env = support.clean_env({"ROCM_SDK_KFD_TOPOLOGY": topology})
        # A timeout turns a doctor waiting on a FIFO into a failure, not a hang.
        return support.run_python(DOCTOR, site=site, env=env, args=["doctor", *list(args)], timeout=300)

    def split_report(self, site: Path, tree: str) -> Any:
        """The JSON report on a recorded topology; its exit status is checked against `ok`."""
        return self.json_at(site, str(support.TOPOLOGIES / tree))

    def json_at(self, site: Path, topology: str) -> Any:
        result = self.doctor_at(site, topology, "--json")
        report = json.loads(result.stdout)
        self.assertEqual(result.returncode, 0 if report["ok"] else 1, result.stderr)
        self.assertEqual(result.stderr, "")
        return report

    def hipext(self, report: Any) -> Any:
        [package] = [package for package in report["packages"] if package["name"] == "hipext"]
        return package


class DoctorSplitTest(SplitSites):
    def test_a_missing_device_wheel_is_named_with_its_pip_line(self) -> None:
        site = self.split_site()
        report = self.split_report(site, "mi210_gfx90a")
        self.assertFalse(report["ok"])
        self.assertEqual(report["install"], "pip install 'hipext[device-gfx90a]'")
        self.assertEqual(report["missing"], ["hipext-device-gfx90a"])
        self.assertEqual(
            self.hipext(report),
            {
                "name": "hipext",
                "version": "1.0",
                "offered_targets": ["gfx1030", "gfx1100", "gfx90a"],
                "gpus": [
                    {
                        "node": 1,
                        "target": "gfx90a",
                        "extra": "device-gfx90a",
                        "status": "missing",
                        "covered_by": [],
                        "missing": [{"name": "hipext-device-gfx90a", "requires": "==1.0", "installed": None}],
                    }
                ],
                "install": "pip install 'hipext[device-gfx90a]'",
            },
        )
        text = self.doctor(site, "mi210_gfx90a")
        self.assertEqual(text.returncode, 1)
        self.assertIn("GPU gfx90a (KFD node 1): covered by rocm-sdk-device-gfx90a", text.stdout)
        self.assertIn(
            "\nhipext 1.0 lacks the device code for the GPU gfx90a (KFD node 1) of this machine (missing: "
            "hipext-device-gfx90a==1.0), so its kernels fail there with hipErrorInvalidImage; add it with: "
            "pip install 'hipext[device-gfx90a]'\n",
            text.stdout,
        )
        self.assertTrue(text.stdout.endswith("to add what is missing: pip install 'hipext[device-gfx90a]'\n"))

    def test_the_installed_device_wheel_covers_its_gpu(self) -> None:
        site = self.split_site(devices=["gfx90a"])
        report = self.split_report(site, "mi210_gfx90a")
        self.assertTrue(report["ok"])
        self.assertEqual((report["install"], report["missing"]), (None, []))
        [gpu] = self.hipext(report)["gpus"]
        self.assertEqual(gpu["status"], "covered")
        self.assertEqual(gpu["covered_by"], [{"name": "hipext-device-gfx90a", "version": "1.0"}])
        text = self.doctor(site, "mi210_gfx90a")
        self.assertEqual(text.returncode, 0)
        self.assertIn("hipext 1.0: GPU gfx90a (KFD node 1) covered by hipext-device-gfx90a 1.0", text.stdout)
        self.assertIn("everything this machine's GPUs need is installed", text.stdout)

    def test_two_gpus_are_judged_each_and_added_in_one_line(self) -> None:
        one = self.split_report(self.split_site(devices=["gfx1030"]), "two_gpus_gfx90a_gfx1030")
        statuses = [(gpu["node"], gpu["target"], gpu["status"]) for gpu in self.hipext(one)["gpus"]]
        self.assertEqual(statuses, [(1, "gfx90a", "missing"), (2, "gfx1030", "covered")])
        self.assertEqual(one["install"], "pip install 'hipext[device-gfx90a]'")
        self.tmp = self.tmp / "none"
        self.tmp.mkdir()
        site = self.split_site()
        none = self.split_report(site, "two_gpus_gfx90a_gfx1030")
        self.assertEqual(none["install"], "pip install 'hipext[device-gfx1030,device-gfx90a]'")
        self.assertEqual(none["missing"], ["hipext-device-gfx1030", "hipext-device-gfx90a"])
        text = self.doctor(site, "two_gpus_gfx90a_gfx1030").stdout
        self.assertIn(
            "hipext 1.0 lacks the device code for the GPUs gfx90a (KFD node 1), gfx1030 (KFD node 2) of this "
            "machine (missing: hipext-device-gfx1030==1.0, hipext-device-gfx90a==1.0)",
            text,
        )

    def test_a_gpu_the_package_was_not_built_for_has_no_device_code(self) -> None:
        site = self.split_site()
        report = self.split_report(site, "strix_halo_gfx1151_apu")
        [gpu] = self.hipext(report)["gpus"]
        self.assertEqual((gpu["status"], gpu["extra"], gpu["missing"]), ("unsupported", None, []))
        self.assertEqual((report["ok"], report["install"]), (False, None))
        text = self.doctor(site, "strix_halo_gfx1151_apu")
        self.assertEqual(text.returncode, 1)
        self.assertIn(
            "hipext 1.0 has no device code for gfx1151 (KFD node 1): it offers gfx1030, gfx1100, gfx90a\n", text.stdout
        )
        self.assertNotIn("to add what is missing", text.stdout)

    def test_every_wheel_of_the_extra_is_needed_the_family_wheel_too(self) -> None:
        site = self.split_site(devices=["gfx1100"])
        report = self.json_at(site, self.topology("gfx1100", 110000))
        [gpu] = self.hipext(report)["gpus"]
        self.assertEqual(gpu["covered_by"], [{"name": "hipext-device-gfx1100", "version": "1.0"}])
        self.assertEqual(gpu["missing"], [{"name": "hipext-device-gfx11xx", "requires": "==1.0", "installed": None}])
        self.assertEqual(report["install"], "pip install 'hipext[device-gfx1100]'")

    def test_a_device_wheel_of_another_version_does_not_cover(self) -> None:
        site = self.split_site(devices=["gfx90a"], device_version="0.9")
        report = self.split_report(site, "mi210_gfx90a")
        [gpu] = self.hipext(report)["gpus"]
        self.assertEqual(gpu["missing"], [{"name": "hipext-device-gfx90a", "requires": "==1.0", "installed": "0.9"}])
        self.assertIn("(missing: hipext-device-gfx90a==1.0 (0.9 installed))", self.doctor(site, "mi210_gfx90a").stdout)
        # PEP 440's equality: `==1.0` is `1.0.0`, and a local build of it.
        for version in ("1.0.0", "1.0+rocm7"):
            self.tmp = self.tmp / version
            self.tmp.mkdir()
            same = self.split_report(self.split_site(devices=["gfx90a"], device_version=version), "mi210_gfx90a")
            self.assertTrue(same["ok"], version)

    def test_markers_are_read_as_pep_508_writes_them(self) -> None:
        extras = [
            "Provides-Extra: device_GFX90a",
            "Requires-Dist: hipext-device-gfx90a == 1.0; extra == 'device-gfx90a'",
            'Requires-Dist: hipext-device-gfx9 (==1.0) ; "device_gfx90a" == extra',
            'Requires-Dist: hipext-device-linux==1.0; (sys_platform == "linux" and extra == "device-gfx90a")',
            'Requires-Dist: hipext-device-win==1.0; sys_platform == "win32" and extra == "device-gfx90a"',
            "Requires-Dist: hipext-device-old==1.0; extra == 'device-gfx90a' and python_version < '3.0'",
            # rocm-kpack's variant lines name no extra: never an extra's requirement.
            'Requires-Dist: hipext-device-variant==1.0; "amd :: gfx_arch :: gfx90a" in variant_properties',
            "Requires-Dist: numpy>=1.2",
            "Provides-Extra: device-all",
            'Requires-Dist: hipext-device-all-only==1.0; extra == "device-all"',
        ]
        report = self.split_report(self.split_site(extras=extras), "mi210_gfx90a")
        [gpu] = self.hipext(report)["gpus"]
        self.assertEqual(gpu["extra"], "device-gfx90a")
        self.assertEqual(
            [wanted["name"] for wanted in gpu["missing"]],
            ["hipext-device-gfx90a", "hipext-device-gfx9", "hipext-device-linux"],
        )
        self.assertEqual(self.hipext(report)["offered_targets"], ["gfx90a"])

    def test_the_sdk_and_a_split_package_are_added_in_one_line(self) -> None:
        site = self.split_site(sdk_devices=())
        report = self.split_report(site, "mi210_gfx90a")
        self.assertEqual(report["install"], "pip install 'rocm[device-gfx90a]' 'hipext[device-gfx90a]'")
        self.assertEqual(report["missing"], ["hipext-device-gfx90a", "rocm-sdk-device-gfx90a"])

    def test_the_sdks_own_extras_are_not_a_split_package(self) -> None:
        site = self.split_site()
        [rocm] = site.glob("rocm-*.dist-info")
        metadata = rocm / "METADATA"
        metadata.write_text(
            metadata.read_text()
            + "Provides-Extra: device-gfx90a\n"
            + 'Requires-Dist: rocm-sdk-device-gfx90a==%s; extra == "device-gfx90a"\n' % support.VERSION
        )
        report = self.split_report(site, "mi210_gfx90a")
        self.assertEqual([package["name"] for package in report["packages"]], ["hipext"])

    def test_no_gpu_needs_nothing_and_the_packages_are_still_listed(self) -> None:
        site = self.split_site()
        report = self.split_report(site, "cpu_only")
        self.assertEqual((report["ok"], report["install"]), (True, None))
        self.assertEqual(self.hipext(report)["gpus"], [])
        self.assertNotIn("hipext", self.doctor(site, "cpu_only").stdout)

    def test_hostile_metadata_is_escaped_or_left_out(self) -> None:
        site = self.split_site(extras=[*HIPEXT_EXTRAS, "Requires-Dist: not a requirement; extra == 'device-gfx90a'"])
        # A version with a terminal escape; a name no pip line could hold; bytes that are not UTF-8.
        support.add_dist(site, "evil", "1.0\x1b[2J", [], ["Provides-Extra: device-gfx90a"])
        support.add_dist(site, "bad-name", "1.0", [], ["Provides-Extra: device-gfx90a"])
        for folder in site.glob("bad_name-*.dist-info"):
            text = (folder / "METADATA").read_text().replace("Name: bad-name", "Name: bad name'; rm -rf ~")
            (folder / "METADATA").write_text(text)
        support.write(site / "broken-1.0.dist-info" / "METADATA", b"Name: broken\nVersion: \xff\xfe\n")
        # FIFOs where metadata should be, one of them the device wheel's: nothing waits on them.
        for name in ("fifo-1.0.dist-info", "hipext_device_gfx90a-1.0.dist-info"):
            (site / name).mkdir()
            os.mkfifo(str(site / name / "METADATA"))
        report = self.split_report(site, "mi210_gfx90a")
        self.assertEqual(self.hipext(report)["gpus"][0]["missing"][0]["installed"], None)
        self.assertEqual([package["name"] for package in report["packages"]], ["evil", "hipext"])
        text = self.doctor(site, "mi210_gfx90a").stdout
        self.assertIn("evil 1.0\\x1b[2J: GPU gfx90a (KFD node 1) covered by the package itself", text)
        self.assertNotIn("\x1b", text)
        self.assertNotIn("rm -rf", text)


# Calls hipext's initializer twice; prints each call's warnings of our category, with the
# file each warning is attributed to.
INITIALIZE = """
import json, warnings
import rocm_sdk
import hipext._rocm_init as init
seen = []
for _ in range(2):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        init.initialize()
    ours = [w for w in caught if issubclass(w.category, rocm_sdk.MissingDeviceCodeWarning)]
    seen.append([(str(w.message), w.filename) for w in ours])
print(json.dumps(seen))
"""


class WarningSplitTest(SplitSites):
    def warnings(self, site: Path, tree: str, topology: Optional[str] = None) -> Any:
        env = support.clean_env({"ROCM_SDK_KFD_TOPOLOGY": topology or str(support.TOPOLOGIES / tree)})
        return json.loads(support.run_python(INITIALIZE, site=site, env=env, check=True).stdout)

    def test_initialize_process_warns_once_in_the_doctors_words(self) -> None:
        site = self.split_site()
        [first, second] = self.warnings(site, "mi210_gfx90a")
        self.assertEqual(second, [], "once per process")
        [(message, filename)] = first
        [sentence] = [line for line in self.doctor(site, "mi210_gfx90a").stdout.splitlines() if "lacks" in line]
        self.assertEqual(message, sentence + " (`rocm-sdk doctor` says more)")
        self.assertIn("pip install 'hipext[device-gfx90a]'", message)
        self.assertEqual(Path(filename), site / "hipext" / "_rocm_init.py", "attributed to the caller")

    def test_no_warning_when_it_does_not_apply(self) -> None:
        cases = [
            ("covered", ["gfx90a"], "mi210_gfx90a"),
            ("no GPU", [], "cpu_only"),
            # Nothing to install: the doctor's to report.
            ("not built for the GPU", [], "strix_halo_gfx1151_apu"),
        ]
        for name, devices, tree in cases:
            with self.subTest(case=name):
                self.tmp = self.tmp / name.replace(" ", "-")
                self.tmp.mkdir()
                self.assertEqual(self.warnings(self.split_site(devices=devices), tree), [[], []])

    def test_a_package_without_device_extras_is_not_warned_about(self) -> None:
        site = self.split_site(extras=["Requires-Dist: numpy"])
        self.assertEqual(self.warnings(site, "mi210_gfx90a"), [[], []])

    def test_importing_rocm_sdk_reads_no_distribution(self) -> None:
        code = "import sys, rocm_sdk\nprint(sorted(m for m in sys.modules if m.startswith('rocm_sdk._')))"
        result = support.run_python(code, site=self.split_site(), check=True)
        loaded = json.loads(result.stdout.replace("'", '"'))
        self.assertNotIn("rocm_sdk._device_extras", loaded)
        self.assertNotIn("rocm_sdk._requirements", loaded)
