"""`rocm_sdk._kfd_topology`: the GPUs of a machine from its KFD topology, as
`rocm_agent_enumerator` names them (SPEC §4), on recorded trees of real machines."""

import ast
import json
import shutil
from typing import Any, Optional

from tests import support

MODULE = support.PYTHON_ROOT / "meta" / "rocm_sdk" / "_kfd_topology.py"

# Runs the module as a file of its own, outside any package: it must need nothing else.
DETECT = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("kfd_topology", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
root = sys.argv[2] if len(sys.argv) > 2 else module.topology_root()
print(json.dumps([agent._asdict() for agent in module.detect_agents(root)]))
"""


def detect(root: Optional[support.PathArg] = None, env: Optional[dict[str, str]] = None) -> Any:
    args = [MODULE] + ([root] if root is not None else [])
    return json.loads(support.run_python(DETECT, env=support.clean_env(env), args=args, check=True).stdout)


def targets(root: support.PathArg) -> list[tuple[int, str]]:
    return [(agent["node"], agent["target"]) for agent in detect(root)]


class KfdTopologyTest(support.TempDirTest):
    def test_recorded_machines(self) -> None:
        cases = {
            "mi210_gfx90a": [(1, "gfx90a")],
            "strix_halo_gfx1151_apu": [(1, "gfx1151")],
            "two_gpus_gfx90a_gfx1030": [(1, "gfx90a"), (2, "gfx1030")],
            "mi300x_gfx942": [(1, "gfx942")],
            "cpu_only": [],
        }
        for tree, expected in cases.items():
            with self.subTest(tree=tree):
                self.assertEqual(targets(support.TOPOLOGIES / tree), expected)

    def test_agents_carry_what_they_were_named_from(self) -> None:
        [agent] = detect(support.TOPOLOGIES / "mi210_gfx90a")
        self.assertEqual(
            agent,
            {
                "node": 1,
                "target": "gfx90a",
                "gfx_target_version": 90010,
                "vendor_id": 4098,
                "device_id": 29711,
                "simd_count": 416,
            },
        )

    def test_no_topology_is_no_gpu(self) -> None:
        self.assertEqual(targets(self.tmp / "missing"), [])
        (self.tmp / "empty" / "nodes").mkdir(parents=True)
        self.assertEqual(targets(self.tmp / "empty"), [])

    def test_the_root_comes_from_the_environment(self) -> None:
        tree = str(support.TOPOLOGIES / "strix_halo_gfx1151_apu")
        self.assertEqual([a["target"] for a in detect(env={"ROCM_SDK_KFD_TOPOLOGY": tree})], ["gfx1151"])

    def test_nodes_in_numeric_order_and_unreadable_nodes_skipped(self) -> None:
        root = self.tmp / "topology"
        source = support.TOPOLOGIES / "two_gpus_gfx90a_gfx1030" / "nodes"
        shutil.copytree(str(source / "1"), str(root / "nodes" / "10"))
        shutil.copytree(str(source / "2"), str(root / "nodes" / "2"))
        (root / "nodes" / "3").mkdir()  # no properties
        support.write(root / "nodes" / "4" / "properties", "gfx_target_version not-a-number\n")
        support.write(root / "nodes" / "not-a-node" / "properties", "gfx_target_version 90010\n")
        self.assertEqual(targets(root), [(2, "gfx1030"), (10, "gfx90a")])

    def test_target_names_from_gfx_target_version(self) -> None:
        code = (
            "import importlib.util, json, sys\n"
            "spec = importlib.util.spec_from_file_location('k', sys.argv[1])\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "print(json.dumps([m.target_name(v) for v in map(int, sys.argv[2:])]))\n"
        )
        versions = [90010, 90402, 90500, 100300, 110000, 110501, 120001, 120500, 0, -1, 110099, 101600]
        result = support.run_python(code, args=[MODULE, *versions], check=True)
        expected = ["gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1151", "gfx1201", "gfx1250"]
        self.assertEqual(json.loads(result.stdout), [*expected, None, None, None, None])

    def test_the_module_imports_only_the_standard_library(self) -> None:
        # Another package (a PEP 850 variant provider) carries this file as it is.
        tree = ast.parse(MODULE.read_text(encoding="utf-8"))
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                self.assertEqual(node.level, 0, "no relative imports")
                imported.add(str(node.module).split(".")[0])
        self.assertEqual(imported, {"os", "stat", "warnings", "collections", "typing"})
