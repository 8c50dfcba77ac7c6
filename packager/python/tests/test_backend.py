"""The `rocm` sdist's in-tree build backend: extras per SPEC §3 and a valid wheel."""

import base64
import csv
import hashlib
import io
import json
import tarfile
import zipfile
from pathlib import Path
from typing import Any, Optional

from tests import support

CALL = """
import json, sys
sys.path.insert(0, sys.argv[1])
import _rocm_build_backend as backend
name = sys.argv[2]
if name == "requirements":
    try:
        requires, extras = backend.compute_requirements(backend.load_dist_info())
        print(json.dumps([requires, extras]))
    except ValueError as error:
        print(json.dumps(["error", str(error)]))
elif name == "build_wheel":
    print(json.dumps(backend.build_wheel(sys.argv[3], None, *sys.argv[4:])))
elif name == "prepare":
    print(json.dumps(backend.prepare_metadata_for_build_wheel(sys.argv[3])))
elif name == "build_sdist":
    print(json.dumps(backend.build_sdist(sys.argv[3])))
else:
    print(json.dumps([backend.get_requires_for_build_wheel(), backend.get_requires_for_build_sdist()]))
"""


class BackendSupport(support.TempDirTest):
    """An sdist tree and calls into its backend; no tests of its own, so other modules
    can build on it."""

    def make_sdist_tree(self, **options: Any) -> Path:
        root = self.tmp / "rocm"
        support.copy_tree(support.PYTHON_ROOT / "meta", root)
        support.write_dist_info(root / "rocm_sdk", logical="meta", **options)
        return root

    def call(
        self, root: Path, name: str, *args: object, env: Optional[dict[str, str]] = None, gpu: Optional[str] = None
    ) -> Any:
        path_dirs = []
        if gpu is not None:
            support.write(self.tmp / "bin" / "offload-arch", "#!/bin/sh\necho %s\n" % gpu, mode=0o755)
            path_dirs.append(str(self.tmp / "bin"))
        result = support.run_python(
            CALL, env=support.clean_env(env, path_dirs), args=[root, name, *list(args)], check=True
        )
        # The backend's log (what `pip install -v` shows), for tests that read it.
        self.log = result.stderr
        return json.loads(result.stdout)

    def kpack(self, **options: Any) -> Path:
        return self.make_sdist_tree(families=["gfx1030", "gfx90a"], kpack=True, **options)


class BackendTest(BackendSupport):
    def test_nothing_is_needed_to_build(self) -> None:
        self.assertEqual(self.call(self.kpack(), "requires"), [[], []])

    def test_no_target_named_or_detected_leaves_out_the_device_extra(self) -> None:
        requires, extras = self.call(self.kpack(), "requirements")
        v = support.VERSION
        self.assertEqual(requires, ["rocm-sdk-core==" + v])
        self.assertNotIn("device", extras)
        self.assertEqual(extras["libraries"], ["rocm-sdk-libraries==" + v])
        self.assertEqual(extras["devel"], ["rocm-sdk-devel==" + v])
        self.assertEqual(extras["profiler"], ["rocm-profiler==" + v])
        self.assertEqual(extras["device-gfx90a"], ["rocm-sdk-device-gfx90a==" + v])
        self.assertEqual(extras["device-all"], ["rocm-sdk-device-gfx1030==" + v, "rocm-sdk-device-gfx90a==" + v])

    def test_named_target_gives_the_device_extra(self) -> None:
        root = self.kpack()
        for value in ("gfx90a", "gfx90a:xnack+", "GFX90A"):
            _, extras = self.call(root, "requirements", env={"ROCM_SDK_TARGET_FAMILY": value})
            self.assertEqual(extras["device"], ["rocm-sdk-device-gfx90a==" + support.VERSION], value)

    def test_detected_gpu_gives_the_device_extra(self) -> None:
        _, extras = self.call(self.kpack(), "requirements", gpu="gfx1030")
        self.assertEqual(extras["device"], ["rocm-sdk-device-gfx1030==" + support.VERSION])

    def test_single_target_still_offers_device_target_and_all(self) -> None:
        root = self.make_sdist_tree(families=["gfx90a"], kpack=True)
        _, extras = self.call(root, "requirements")
        self.assertIn("device-gfx90a", extras)
        self.assertIn("device-all", extras)

    def test_unknown_family_is_an_error_listing_the_available_ones(self) -> None:
        kind, message = self.call(self.kpack(), "requirements", env={"ROCM_SDK_TARGET_FAMILY": "gfx942"})
        self.assertEqual(kind, "error")
        self.assertIn("gfx1030, gfx90a", message)

    def test_legacy_pins_the_family_and_has_no_device_extras(self) -> None:
        root = self.make_sdist_tree(families=["gfx110X-all", "gfx94X-dcgpu"], devel_target_specific=True)
        _, extras = self.call(root, "requirements", env={"ROCM_SDK_TARGET_FAMILY": "gfx94x-dcgpu"})
        v = support.VERSION
        # The family as TheRock spells it, whatever the variable's case (SPEC §2 "Names").
        self.assertEqual(extras["libraries"], ["rocm-sdk-libraries-gfx94X-dcgpu==" + v])
        self.assertEqual(extras["devel"], ["rocm-sdk-devel-gfx94X-dcgpu==" + v])
        self.assertFalse([name for name in extras if name.startswith("device")])

    def test_platform_exclusive_targets_get_markers(self) -> None:
        root = self.kpack(linux=["gfx1030", "gfx90a"], windows=["gfx1030"])
        _, extras = self.call(root, "requirements")
        self.assertEqual(
            extras["device-gfx90a"], ['rocm-sdk-device-gfx90a==%s; sys_platform == "linux"' % support.VERSION]
        )
        self.assertEqual(extras["device-gfx1030"], ["rocm-sdk-device-gfx1030==" + support.VERSION])

    def test_wheel_is_valid_and_matches_prepared_metadata(self) -> None:
        root = self.kpack(linux=["gfx1030", "gfx90a"], windows=["gfx1030"])
        out = self.tmp / "out"
        out.mkdir()
        prepared = self.call(root, "prepare", out, env={"ROCM_SDK_TARGET_FAMILY": "gfx90a"})
        self.assertEqual(prepared, "rocm-%s.dist-info" % support.VERSION)
        # PEP 517: the prepared `.dist-info` directory is handed back; the wheel keeps it
        # even when the environment changed in between.
        name = self.call(root, "build_wheel", out, out / prepared, env={"ROCM_SDK_TARGET_FAMILY": "gfx1030"})
        fresh = self.tmp / "fresh"
        fresh.mkdir()
        self.call(root, "build_wheel", fresh, env={"ROCM_SDK_TARGET_FAMILY": "gfx90a"})
        with zipfile.ZipFile(str(fresh / name)) as without_prepared, zipfile.ZipFile(str(out / name)) as with_prepared:
            self.assertEqual(without_prepared.read(prepared + "/METADATA"), with_prepared.read(prepared + "/METADATA"))
        self.assertEqual(name, "rocm-%s-py3-none-any.whl" % support.VERSION)
        with zipfile.ZipFile(str(out / name)) as wheel:
            names = wheel.namelist()
            prefix = prepared + "/"
            metadata = wheel.read(prefix + "METADATA").decode()
            self.assertEqual(metadata, (out / prepared / "METADATA").read_text())
            # The same license as the platform wheels of the build.
            self.assertIn("\nLicense: MIT\n", metadata)
            self.assertIn('Requires-Dist: rocm-sdk-device-gfx90a==%s; extra == "device"' % support.VERSION, metadata)
            self.assertIn(
                'Requires-Dist: rocm-sdk-device-gfx90a==%s; (sys_platform == "linux") and extra == "device-all"'
                % support.VERSION,
                metadata,
            )
            self.assertIn("rocm-sdk = rocm_sdk.__main__:main", wheel.read(prefix + "entry_points.txt").decode())
            expected_files = ("rocm_sdk/__init__.py", "rocm_sdk/_dist_info.py", "rocm_sdk/_dist_info_data.py")
            for expected in (*expected_files, "rocm_sdk/tests/base_test.py"):
                self.assertIn(expected, names)
            self.assertFalse([n for n in names if "__pycache__" in n or n.endswith(".pyc")])
            rows = list(csv.reader(io.StringIO(wheel.read(prefix + "RECORD").decode())))
            self.assertEqual(sorted(row[0] for row in rows), sorted(names))
            for path, digest, size in rows:
                if path == prefix + "RECORD":
                    self.assertEqual((digest, size), ("", ""))
                    continue
                data = wheel.read(path)
                expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                self.assertEqual((digest, size), ("sha256=" + expected, str(len(data))), path)

    def test_sdist_repacks_the_tree(self) -> None:
        root = self.kpack()
        out = self.tmp / "sdist"
        out.mkdir()
        name = self.call(root, "build_sdist", out)
        with tarfile.open(str(out / name)) as archive:
            names = archive.getnames()
        self.assertIn("rocm-%s/_rocm_build_backend.py" % support.VERSION, names)
        self.assertIn("rocm-%s/rocm_sdk/_dist_info.py" % support.VERSION, names)
        self.assertIn("rocm-%s/rocm_sdk/_dist_info_data.py" % support.VERSION, names)
