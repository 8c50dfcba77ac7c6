"""`rocm_sdk_variant_provider`: the `amd` wheel variant provider plugin (SPEC section 9),
laid out as the packager builds its wheel (its module, the doctor's `_kfd_topology.py`
and the owner table), on recorded KFD topologies. variantlib's judgement of the built
wheel is in tests/it/variants.rs; these are the plugin's own rules."""

import json
import shutil
from typing import Any

from tests import support

PACKAGE = "rocm_sdk_variant_provider"

# The plugin's answers as JSON: supported values, every valid value, and
# `supported_values` of hand-named targets (argv[1], comma-separated) with the owner table.
ASK = """
import collections, json, sys
import rocm_sdk_variant_provider as plugin
Agent = collections.namedtuple("Agent", "target")
supported = [(c.name, c.values, c.multi_value) for c in plugin.get_supported_configs()]
every = [(c.name, c.values, c.multi_value) for c in plugin.get_all_configs()]
named = plugin.supported_values([Agent(t) for t in sys.argv[1].split(",") if t], plugin._target_owners())
print(json.dumps({"supported": supported, "all": every, "named": named}))
"""


class VariantProviderTest(support.TempDirTest):
    def setUp(self) -> None:
        super().setUp()
        package = self.tmp / PACKAGE
        package.mkdir()
        shutil.copy(support.PYTHON_ROOT / "variant_provider" / PACKAGE / "__init__.py", package)
        shutil.copy(support.PYTHON_ROOT / "meta" / "rocm_sdk" / "_kfd_topology.py", package)
        shutil.copy(support.PYTHON_ROOT / "common" / "target_owners.json", package)

    def ask(self, tree: str, named: str = "") -> Any:
        env = support.clean_env({"ROCM_SDK_KFD_TOPOLOGY": str(support.TOPOLOGIES / tree)})
        result = support.run_python(ASK, site=self.tmp, env=env, args=[named], check=True)
        return json.loads(result.stdout)

    def test_each_recorded_machine_supports_its_gpus_targets(self) -> None:
        cases = {
            "mi210_gfx90a": ["gfx90a"],
            "rx6800xt_gfx1030": ["gfx1030"],
            "strix_halo_gfx1151_apu": ["gfx1151"],
            "two_gpus_gfx90a_gfx1030": ["gfx90a", "gfx1030"],
        }
        for tree, values in cases.items():
            self.assertEqual(self.ask(tree)["supported"], [["gfx_arch", values, True]], tree)
        self.assertEqual(self.ask("cpu_only")["supported"], [])

    def test_every_supported_value_is_a_valid_one(self) -> None:
        answer = self.ask("two_gpus_gfx90a_gfx1030")
        [(name, values, multi_value)] = answer["all"]
        self.assertEqual((name, multi_value), ("gfx_arch", True))
        self.assertEqual(len(values), len(set(values)))
        for value in ["gfx90a", "gfx1030", "gfx1151", "gfx942", "gfx1250", "gfx1250_strict"]:
            self.assertIn(value, values)
        for value in values:
            self.assertRegex(value, r"^[a-z0-9_.]+$")

    def test_a_target_is_followed_by_its_owner_once(self) -> None:
        named = self.ask("cpu_only", named="gfx1250-strict,gfx90a,gfx1250,GFX90A")["named"]
        self.assertEqual(named, ["gfx1250_strict", "gfx1250", "gfx90a"])
