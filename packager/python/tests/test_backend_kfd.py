"""The `rocm` sdist's backend picks from the KFD topology first (SPEC §3): the recorded
machines' GPUs select what `rocm-sdk doctor` names for them, before `offload-arch` and the
default, and the log says which source decided and why."""

import shutil

from tests import support
from tests.test_backend import BackendSupport


def topology(tree: str) -> dict[str, str]:
    return {"ROCM_SDK_KFD_TOPOLOGY": str(support.TOPOLOGIES / tree)}


def device(*owners: str) -> list[str]:
    return ["rocm-sdk-device-%s==%s" % (owner, support.VERSION) for owner in owners]


class KfdSelectionTest(BackendSupport):
    def test_each_recorded_machine_selects_its_gpus_device_packages(self) -> None:
        root = self.kpack()
        cases = {
            "mi210_gfx90a": ["gfx90a"],
            "rx6800xt_gfx1030": ["gfx1030"],
            # Two GPUs of different owners: a device package for each, in node order.
            "two_gpus_gfx90a_gfx1030": ["gfx90a", "gfx1030"],
        }
        for tree, owners in cases.items():
            with self.subTest(tree=tree):
                _, extras = self.call(root, "requirements", env=topology(tree))
                self.assertEqual(extras["device"], device(*owners))
                head = "target family %s (from kfd topology): the KFD topology at %s lists " % (
                    owners[0],
                    support.TOPOLOGIES / tree,
                )
                self.assertIn(head, self.log)
                self.assertIn("; device packages: " + ", ".join(owners), self.log)

    def test_a_gpu_the_build_does_not_offer_falls_back_to_offload_arch_then_the_default(self) -> None:
        root = self.kpack()
        _, extras = self.call(root, "requirements", env=topology("strix_halo_gfx1151_apu"))
        self.assertNotIn("device", extras)
        self.assertIn(
            "GPU gfx1151 (KFD node 1): this build has no device code for it (it offers gfx1030, gfx90a)", self.log
        )
        self.assertIn("no offload-arch in core, on PATH or beside the interpreter", self.log)
        self.assertIn("target family gfx1030 (from default)", self.log)
        _, extras = self.call(root, "requirements", env=topology("strix_halo_gfx1151_apu"), gpu="gfx90a")
        self.assertEqual(extras["device"], device("gfx90a"))
        self.assertIn("target family gfx90a (from detected): offload-arch reported a GPU of it", self.log)
        _, extras = self.call(root, "requirements", env=topology("cpu_only"))
        self.assertNotIn("device", extras)
        self.assertIn("the KFD topology at %s lists no GPU" % (support.TOPOLOGIES / "cpu_only"), self.log)

    def test_the_topology_comes_before_offload_arch_and_after_the_environment(self) -> None:
        root = self.kpack()
        _, extras = self.call(root, "requirements", env=topology("mi210_gfx90a"), gpu="gfx1030")
        self.assertEqual(extras["device"], device("gfx90a"))
        env = dict(topology("mi210_gfx90a"), ROCM_SDK_TARGET_FAMILY="gfx1030")
        _, extras = self.call(root, "requirements", env=env)
        self.assertEqual(extras["device"], device("gfx1030"))
        self.assertIn("target family gfx1030 (from environment): ROCM_SDK_TARGET_FAMILY=gfx1030", self.log)

    def test_an_owner_takes_the_gpu_of_a_target_it_owns(self) -> None:
        # A build of gfx1250-strict alone: a gfx1250 GPU needs the gfx1250 owner's package.
        root = self.make_sdist_tree(families=["gfx1250-strict"], kpack=True)
        tree = self.tmp / "gfx1250"
        shutil.copytree(str(support.TOPOLOGIES / "mi210_gfx90a"), str(tree))
        properties = tree / "nodes" / "1" / "properties"
        properties.write_text(properties.read_text().replace("gfx_target_version 90010", "gfx_target_version 120500"))
        _, extras = self.call(root, "requirements", env={"ROCM_SDK_KFD_TOPOLOGY": str(tree)})
        self.assertEqual(extras["device"], device("gfx1250"))

    def test_legacy_takes_the_first_gpus_family_and_says_what_the_others_need(self) -> None:
        root = self.make_sdist_tree(families=["gfx103X-dgpu", "gfx90X-dcgpu"], devel_target_specific=True)
        _, extras = self.call(root, "requirements", env=topology("two_gpus_gfx90a_gfx1030"))
        v = support.VERSION
        self.assertEqual(extras["libraries"], ["rocm-sdk-libraries-gfx90X-dcgpu==" + v])
        self.assertEqual(extras["devel"], ["rocm-sdk-devel-gfx90X-dcgpu==" + v])
        self.assertIn("target family gfx90X-dcgpu (from kfd topology)", self.log)
        self.assertIn(
            "GPU gfx1030 (KFD node 2) would need the gfx103X-dgpu packages, which cannot share an environment "
            "with gfx90X-dcgpu's: install them in another one with ROCM_SDK_TARGET_FAMILY=gfx103X-dgpu",
            self.log,
        )
        _, extras = self.call(root, "requirements", env=topology("rx6800xt_gfx1030"))
        self.assertEqual(extras["libraries"], ["rocm-sdk-libraries-gfx103X-dgpu==" + v])

    def test_the_log_escapes_what_it_did_not_write(self) -> None:
        tree = self.tmp / "topology\x1b[31m"
        shutil.copytree(str(support.TOPOLOGIES / "mi210_gfx90a"), str(tree))
        self.call(self.kpack(), "requirements", env={"ROCM_SDK_KFD_TOPOLOGY": str(tree)})
        self.assertIn("topology\\x1b[31m", self.log)
        self.assertNotIn("\x1b", self.log)
