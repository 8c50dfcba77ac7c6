"""Hostile KFD topologies: what every reader of `_kfd_topology` (doctor and `--json`,
`rocm-sdk version` and `initialize_process` through the missing device code check, the
variant plugin) does with a FIFO where `properties` should be, node directories named
with digits that are not ASCII, and a topology path holding escapes (SPEC §4, §5)."""

import json
import os
import shutil
from pathlib import Path
from typing import Any

from tests import support
from tests.test_doctor import DOCTOR, INITIALIZE, Sites
from tests.test_kfd_topology import targets
from tests.test_variant_provider import ASK, PACKAGE

# Generous: a reader that waits on a FIFO waits forever, so any bound tells them apart.
HANG = 120

GFX90A_NODE = support.TOPOLOGIES / "mi210_gfx90a" / "nodes" / "1"


def fifo_topology(root: Path) -> Path:
    """Nodes 1 and 2 whose `properties` is a FIFO and a symlink to one (no writer: a
    blocking open waits forever), node 4 a character device, node 3 a gfx90a."""
    nodes = root / "nodes"
    (nodes / "1").mkdir(parents=True)
    os.mkfifo(str(nodes / "1" / "properties"))
    (nodes / "2").mkdir()
    (nodes / "2" / "properties").symlink_to(nodes / "1" / "properties")
    shutil.copytree(str(GFX90A_NODE), str(nodes / "3"))
    (nodes / "4").mkdir()
    (nodes / "4" / "properties").symlink_to("/dev/zero")
    return root


class HostileTopologyTest(Sites):
    def env(self, root: Path) -> dict[str, str]:
        return support.clean_env({"ROCM_SDK_KFD_TOPOLOGY": str(root)})

    def test_a_fifo_properties_file_is_no_node_and_never_waited_on(self) -> None:
        root = fifo_topology(self.tmp / "topology")
        self.assertEqual(targets(root), [(3, "gfx90a")])
        site = self.site(["gfx90a"])
        env = self.env(root)

        doctor = support.run_python(DOCTOR, site=site, env=env, args=["doctor", "--json"], timeout=HANG)
        report = json.loads(doctor.stdout)
        self.assertEqual(
            [(gpu["node"], gpu["target"], gpu["status"]) for gpu in report["gpus"]], [(3, "gfx90a", "missing")]
        )
        self.assertEqual(doctor.returncode, 1, doctor.stderr)
        text = support.run_python(DOCTOR, site=site, env=env, args=["doctor"], timeout=HANG)
        self.assertIn("GPU gfx90a (KFD node 3): missing rocm-sdk-device-gfx90a", text.stdout)

        version = support.run_python(DOCTOR, site=site, env=env, args=["version"], timeout=HANG)
        self.assertEqual((version.returncode, version.stdout.strip()), (0, support.VERSION), version.stderr)
        self.assertIn(
            "rocm-sdk: warning: no ROCm device package is installed for the GPU gfx90a (KFD node 3)", version.stderr
        )

        initialized = support.run_python(INITIALIZE, site=site, env=env, check=True, timeout=HANG)
        [first, again] = json.loads(initialized.stdout)
        self.assertEqual((len(first), again), (1, []))
        self.assertIn("gfx90a (KFD node 3)", first[0])

    def test_the_variant_plugin_does_not_wait_on_a_fifo(self) -> None:
        root = fifo_topology(self.tmp / "topology")
        plugin = self.tmp / "plugin"
        (plugin / PACKAGE).mkdir(parents=True)
        shutil.copy(str(support.PYTHON_ROOT / "variant_provider" / PACKAGE / "__init__.py"), str(plugin / PACKAGE))
        shutil.copy(str(support.PYTHON_ROOT / "meta" / "rocm_sdk" / "_kfd_topology.py"), str(plugin / PACKAGE))
        shutil.copy(str(support.PYTHON_ROOT / "common" / "target_owners.json"), str(plugin / PACKAGE))
        result = support.run_python(ASK, site=plugin, env=self.env(root), args=[""], check=True, timeout=HANG)
        self.assertEqual(json.loads(result.stdout)["supported"], [["gfx_arch", ["gfx90a"], True]])

    def test_node_names_are_ascii_digits_or_skipped_with_a_warning(self) -> None:
        # `²` is a digit to str.isdigit but not to int(); U+0661 (Arabic-Indic one) is read by
        # int() as 1, which named node 1's GPU twice.
        root = self.tmp / "topology"
        for name in ["1", "\u00b2", "\u0661", "\u0661\u001b[31m"]:
            shutil.copytree(str(GFX90A_NODE), str(root / "nodes" / name))
        self.assertEqual(targets(root), [(1, "gfx90a")])
        site = self.site(["gfx90a"], installed=["rocm-sdk-device-gfx90a"])
        doctor = support.run_python(DOCTOR, site=site, env=self.env(root), args=["doctor", "--json"], timeout=HANG)
        self.assertEqual(doctor.returncode, 0, doctor.stderr)
        report: Any = json.loads(doctor.stdout)
        self.assertEqual([(gpu["node"], gpu["target"]) for gpu in report["gpus"]], [(1, "gfx90a")])
        warnings = [line for line in doctor.stderr.splitlines() if "TopologyWarning" in line]
        self.assertEqual(len(warnings), 3, doctor.stderr)
        self.assertIn("/nodes/\u00b2 in the KFD topology: a node's name is ASCII digits", doctor.stderr)
        self.assertIn("/nodes/\u0661\\x1b[31m in the KFD topology", doctor.stderr)
        self.assertNotIn("\x1b", doctor.stderr)

    def test_node_names_with_leading_zeros_are_skipped_with_a_warning(self) -> None:
        # `int` reads `01` and `001` as 1: two directories would log one GPU node twice.
        root = self.tmp / "topology"
        for name in ["0", "1", "01", "001"]:
            shutil.copytree(str(GFX90A_NODE), str(root / "nodes" / name))
        self.assertEqual(targets(root), [(0, "gfx90a"), (1, "gfx90a")])
        site = self.site(["gfx90a"], installed=["rocm-sdk-device-gfx90a"])
        doctor = support.run_python(DOCTOR, site=site, env=self.env(root), args=["doctor", "--json"], timeout=HANG)
        self.assertEqual(doctor.returncode, 0, doctor.stderr)
        report: Any = json.loads(doctor.stdout)
        self.assertEqual([gpu["node"] for gpu in report["gpus"]], [0, 1])
        warnings = [line for line in doctor.stderr.splitlines() if "TopologyWarning" in line]
        self.assertEqual(len(warnings), 2, doctor.stderr)
        for name in ["01", "001"]:
            self.assertIn(
                "/nodes/%s in the KFD topology: a node's name is ASCII digits without leading zeros" % name,
                doctor.stderr,
            )

    def test_doctor_escapes_the_topology_path(self) -> None:
        root = self.tmp / "x\x1b[31m\x1b]0;owned\x07"
        shutil.copytree(str(support.TOPOLOGIES / "cpu_only"), str(root))
        site = self.site(["gfx90a"])
        doctor = support.run_python(DOCTOR, site=site, env=self.env(root), args=["doctor"], timeout=HANG)
        self.assertEqual(doctor.returncode, 0, doctor.stderr)
        self.assertNotIn("\x1b", doctor.stdout + doctor.stderr)
        self.assertNotIn("\x07", doctor.stdout + doctor.stderr)
        self.assertIn("GPUs from %s" % str(self.tmp / "x\\x1b[31m\\x1b]0;owned\\x07"), doctor.stdout)
        self.assertIn("no GPU found", doctor.stdout)
        # `--json` carries the path as it is; JSON escapes it.
        report = json.loads(support.run_python(DOCTOR, site=site, env=self.env(root), args=["doctor", "--json"]).stdout)
        self.assertEqual(report["topology"], str(root))
