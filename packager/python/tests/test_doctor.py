"""`rocm-sdk doctor` and the runtime's warning about a GPU without device code (SPEC §4),
on recorded KFD topologies of real machines (`kfd_topologies/`)."""

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests import support

DOCTOR = "import rocm_sdk.__main__ as m, sys; sys.exit(m.main(sys.argv[1:]))"


class Sites(support.TempDirTest):
    """Synthetic installations and the commands run on them; no tests of its own."""

    def site(
        self,
        families: list[str],
        kpack: bool = True,
        installed: Sequence[str] = (),
        libraries: bool = True,
        with_core: bool = True,
        version: str = support.VERSION,
    ) -> Path:
        """A site-packages with rocm (and core); `installed` names device packages (or,
        legacy, libraries packages) to add as installed distributions."""
        site = support.make_site(self.tmp / "env", families=families, kpack=kpack, with_core=with_core, version=version)
        if libraries and kpack:
            support.write(site / "rocm_sdk_libraries" / "__init__.py", "")
            support.add_dist(site, "rocm-sdk-libraries", version, ["rocm_sdk_libraries/__init__.py"])
        for name in installed:
            support.add_dist(site, name, version, [])
        return site

    def doctor(self, site: Path, tree: str, *args: str) -> support.Completed:
        env = support.clean_env({"ROCM_SDK_KFD_TOPOLOGY": str(support.TOPOLOGIES / tree)})
        return support.run_python(DOCTOR, site=site, env=env, args=["doctor", *list(args)])

    def report(self, site: Path, tree: str) -> Any:
        result = self.doctor(site, tree, "--json")
        report = json.loads(result.stdout)
        self.assertEqual(result.returncode, 0 if report["ok"] else 1, result.stderr)
        self.assertEqual(result.stderr, "")
        return report

    def site_again(self, families: list[str], **options: Any) -> Path:
        """Another site, beside the first."""
        self.tmp = self.tmp / "again"
        self.tmp.mkdir()
        return self.site(families, **options)


class DoctorTest(Sites):
    def test_a_gfx90a_whose_device_package_is_installed_is_covered(self) -> None:
        site = self.site(["gfx1030", "gfx90a"], installed=["rocm-sdk-device-gfx90a"])
        report = self.report(site, "mi210_gfx90a")
        self.assertTrue(report["ok"])
        [gpu] = report["gpus"]
        self.assertEqual(
            gpu,
            {
                "node": 1,
                "target": "gfx90a",
                "owner": "gfx90a",
                "status": "covered",
                "covered_by": [{"name": "rocm-sdk-device-gfx90a", "version": support.VERSION}],
                "missing": [],
                "extra": "device-gfx90a",
                "install": None,
            },
        )
        text = self.doctor(site, "mi210_gfx90a")
        self.assertEqual(text.returncode, 0)
        self.assertIn("GPU gfx90a (KFD node 1): covered by rocm-sdk-device-gfx90a " + support.VERSION, text.stdout)
        self.assertIn("everything this machine's GPUs need is installed", text.stdout)

    def test_a_gfx1151_apu_without_its_device_package_gets_the_exact_pip_line(self) -> None:
        site = self.site(["gfx1151", "gfx90a"], libraries=False)
        report = self.report(site, "strix_halo_gfx1151_apu")
        self.assertFalse(report["ok"])
        self.assertEqual(report["install"], "pip install 'rocm[device-gfx1151]'")
        self.assertEqual(report["missing"], ["rocm-sdk-device-gfx1151"])
        self.assertEqual(report["gpus"][0]["status"], "missing")
        text = self.doctor(site, "strix_halo_gfx1151_apu")
        self.assertEqual(text.returncode, 1)
        self.assertIn(
            "GPU gfx1151 (KFD node 1): missing rocm-sdk-device-gfx1151; "
            "add it with: pip install 'rocm[device-gfx1151]'",
            text.stdout,
        )
        self.assertIn("to add what is missing: pip install 'rocm[device-gfx1151]'", text.stdout)

    def test_two_gpus_of_different_targets_are_judged_each(self) -> None:
        site = self.site(["gfx1030", "gfx90a"], installed=["rocm-sdk-device-gfx1030"])
        report = self.report(site, "two_gpus_gfx90a_gfx1030")
        statuses = [(gpu["node"], gpu["target"], gpu["status"]) for gpu in report["gpus"]]
        self.assertEqual(statuses, [(1, "gfx90a", "missing"), (2, "gfx1030", "covered")])
        self.assertEqual(report["install"], "pip install 'rocm[device-gfx90a]'")
        both_missing = self.report(self.site_again(["gfx1030", "gfx90a"]), "two_gpus_gfx90a_gfx1030")
        self.assertEqual(both_missing["install"], "pip install 'rocm[device-gfx1030,device-gfx90a]'")

    def test_a_machine_without_a_gpu_needs_nothing(self) -> None:
        report = self.report(self.site(["gfx1030", "gfx90a"]), "cpu_only")
        self.assertEqual((report["gpus"], report["ok"], report["install"]), ([], True, None))
        text = self.doctor(self.site_again(["gfx1030"]), "cpu_only")
        self.assertEqual(text.returncode, 0)
        self.assertIn("no GPU found: nothing needs device code", text.stdout)

    def test_a_target_this_build_does_not_offer_is_unsupported(self) -> None:
        report = self.report(self.site(["gfx1030", "gfx90a"]), "strix_halo_gfx1151_apu")
        self.assertEqual(report["gpus"][0]["status"], "unsupported")
        self.assertEqual((report["ok"], report["install"]), (False, None))
        text = self.doctor(self.site_again(["gfx1030", "gfx90a"]), "strix_halo_gfx1151_apu")
        self.assertIn("this ROCm build has no device code for it (it offers gfx1030, gfx90a)", text.stdout)

    def test_a_gfx1250_gpu_needs_its_owners_package_for_either_target(self) -> None:
        topology = self.tmp / "gfx1250"
        support.write(
            topology / "nodes" / "1" / "properties", "cpu_cores_count 0\nsimd_count 1024\ngfx_target_version 120500\n"
        )
        site = self.site(["gfx1250-strict"])
        env = support.clean_env({"ROCM_SDK_KFD_TOPOLOGY": str(topology)})
        result = support.run_python(DOCTOR, site=site, env=env, args=["doctor", "--json"])
        report = json.loads(result.stdout)
        self.assertEqual(report["gpus"][0]["owner"], "gfx1250")
        self.assertEqual(report["install"], "pip install 'rocm[device-gfx1250]'")

    def test_works_with_only_rocm_installed(self) -> None:
        site = self.site(["gfx1151", "gfx90a"], libraries=False, with_core=False)
        report = self.report(site, "strix_halo_gfx1151_apu")
        self.assertEqual(report["install"], "pip install 'rocm[device-gfx1151]'")
        self.assertEqual(report["devel"], {"installed": False, "expanded": False, "root": None})

    def test_a_post_release_device_package_covers_its_release(self) -> None:
        site = self.site(["gfx90a"], version="7.12.0")
        support.add_dist(site, "rocm-sdk-device-gfx90a", "7.12.0.post2", [])
        self.assertTrue(self.report(site, "mi210_gfx90a")["ok"])

    def test_legacy_builds_name_the_family_to_install(self) -> None:
        site = self.site(["gfx110X-all", "gfx90X-dcgpu"], kpack=False)
        report = self.report(site, "mi210_gfx90a")
        self.assertEqual(report["gpus"][0]["owner"], "gfx90X-dcgpu")
        self.assertEqual(
            report["install"], "ROCM_SDK_TARGET_FAMILY=gfx90X-dcgpu pip install --no-cache-dir 'rocm[libraries]'"
        )


# Calls initialize_process twice; prints each call's warnings of our category.
INITIALIZE = """
import json, warnings
import rocm_sdk
seen = []
for _ in range(2):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rocm_sdk.initialize_process()
    seen.append([str(w.message) for w in caught if issubclass(w.category, rocm_sdk.MissingDeviceCodeWarning)])
print(json.dumps(seen))
"""


class WarningTest(Sites):
    def warnings(self, site: Path, tree: str) -> Any:
        env = support.clean_env({"ROCM_SDK_KFD_TOPOLOGY": str(support.TOPOLOGIES / tree)})
        return json.loads(support.run_python(INITIALIZE, site=site, env=env, check=True).stdout)

    def test_initialize_process_warns_once_naming_the_extra(self) -> None:
        [first, second] = self.warnings(self.site(["gfx1151", "gfx90a"]), "strix_halo_gfx1151_apu")
        self.assertEqual(second, [], "once per process")
        [message] = first
        self.assertIn("GPU gfx1151 (KFD node 1)", message)
        self.assertIn("hipErrorInvalidImage", message)
        self.assertIn("pip install 'rocm[device-gfx1151]'", message)

    def test_no_warning_when_it_does_not_apply(self) -> None:
        cases = [
            ("covered", self.site(["gfx90a"], installed=["rocm-sdk-device-gfx90a"]), "mi210_gfx90a"),
            ("no GPU", self.site_again(["gfx90a"]), "cpu_only"),
            ("no libraries installed", self.site_again(["gfx90a"], libraries=False), "mi210_gfx90a"),
            ("target not on offer", self.site_again(["gfx1030"]), "strix_halo_gfx1151_apu"),
            ("legacy build", self.site_again(["gfx90X-dcgpu"], kpack=False), "mi210_gfx90a"),
        ]
        for name, site, tree in cases:
            with self.subTest(case=name):
                self.assertEqual(self.warnings(site, tree), [[], []])

    def test_console_scripts_warn_once_on_stderr(self) -> None:
        site = self.site(["gfx1151"])
        env = support.clean_env({"ROCM_SDK_KFD_TOPOLOGY": str(support.TOPOLOGIES / "strix_halo_gfx1151_apu")})
        version = support.run_python(DOCTOR, site=site, env=env, args=["version"], check=True)
        self.assertEqual(version.stdout.strip(), support.VERSION)
        [line] = version.stderr.splitlines()
        self.assertTrue(
            line.startswith("rocm-sdk: warning: no ROCm device package is installed for the GPU gfx1151"), line
        )
        # A core console script warns, then runs (here: fails to find) its tool.
        tool = support.run_python("import rocm_sdk_core._cli as c; c.hipcc()", site=site, env=env)
        lines = tool.stderr.splitlines()
        self.assertEqual(len([line for line in lines if line.startswith("rocm-sdk-core: warning: ")]), 1, tool.stderr)
        self.assertTrue(lines[-1].startswith("rocm-sdk-core: cannot run hipcc"), tool.stderr)
        # `doctor` says it in its report instead.
        self.assertEqual(self.doctor(site, "strix_halo_gfx1151_apu").stderr, "")
