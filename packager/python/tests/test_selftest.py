"""`rocm-sdk test` passes on a sound installation and fails on a broken one.

The installation is synthetic but laid out the way pip leaves one in a venv: pure and
platform packages in site-packages, `.dist-info` with RECORD and entry points, console
scripts in the venv's bin directory, real shared libraries built with cc.
"""

import subprocess
import sys
from pathlib import Path

from tests import support
from tests.test_devel import GOOD_TREE

CORE_LIBRARIES = [
    "lib/libamdhip64.so.6",
    "lib/libhipfile.so.0",
    "lib/libhiprtc.so.6",
    "lib/libroctx64.so.4",
    "lib/librocprofiler-sdk.so.1",
    "lib/librocprofiler-sdk-roctx.so.1",
    "lib/libroctracer64.so.4",
    "lib/rocm_sysdeps/lib/librocm_sysdeps_liblzma.so.5",
    "lib/host-math/lib/librocm-openblas.so.0",
    "lib/libamd_comgr.so.3",
    "lib/librocm_kpack.so.0",
    "lib/librocm_smi64.so.7",
    "lib/librocdecode.so.1",
    "lib/librocjpeg.so.1",
    "lib/libamd_smi.so.25",
]
SCRIPTS = {"hipcc": "hipcc", "rocminfo": "rocminfo"}


class SelfTest(support.TempDirTest):
    def setUp(self) -> None:
        super().setUp()
        venv = self.tmp / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        self.python = venv / "bin" / "python"
        purelib = subprocess.check_output(
            [str(self.python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], universal_newlines=True
        ).strip()
        self.site = Path(purelib)
        options = {"families": ["gfx1030", "gfx90a"], "kpack": True}
        support.install_pure(
            self.site, support.PYTHON_ROOT / "meta" / "rocm_sdk", "rocm_sdk", logical="meta", **options
        )
        support.add_dist(self.site, "rocm", support.VERSION, ["rocm_sdk/__init__.py"])
        support.install_pure(
            self.site, support.PYTHON_ROOT / "core" / "rocm_sdk_core", "rocm_sdk_core", logical="core", **options
        )
        core = self.site / "_rocm_sdk_core"
        support.write(core / "__init__.py", "")
        library = support.compile_shared_library(self.tmp / "libprobe.so")
        for relpath in CORE_LIBRARIES:
            support.write(core / relpath, library.read_bytes(), mode=0o755)
        support.write(core / "bin" / "rocminfo", "#!/bin/sh\necho rocminfo\n", mode=0o755)
        support.write(core / "lib" / "libfoo.so", library.read_bytes())
        support.write(core / "lib" / "llvm" / "bin" / "clang", "#!/bin/sh\necho clang\n", mode=0o755)
        record = support.add_dist(self.site, "rocm-sdk-core", support.VERSION, ["rocm_sdk_core/__init__.py"])
        entry_points = "[console_scripts]\n" + "".join(
            "%s = rocm_sdk_core._cli:%s\n" % (script, function) for script, function in SCRIPTS.items()
        )
        support.write(record.parent / "entry_points.txt", entry_points)
        for script, function in SCRIPTS.items():
            wrapper = "#!%s\nimport sys\nfrom rocm_sdk_core._cli import %s\nsys.exit(%s())\n" % (
                self.python,
                function,
                function,
            )
            support.write(venv / "bin" / script, wrapper, mode=0o755)
        # devel, with the tree of the devel tests
        support.install_pure(self.site, support.PYTHON_ROOT / "devel", "rocm_sdk_devel", logical="devel", **options)
        support.write(self.site / "rocm_sdk_devel" / "_devel.tar", support.tar_bytes(GOOD_TREE))
        support.add_dist(
            self.site,
            "rocm-sdk-devel",
            support.VERSION,
            [
                "rocm_sdk_devel/__init__.py",
                "rocm_sdk_devel/_dist_info.py",
                "rocm_sdk_devel/_dist_info_data.py",
                "rocm_sdk_devel/_devel.tar",
            ],
        )

    def rocm_sdk_test(self) -> support.Completed:
        return subprocess.run(
            [str(self.python), "-m", "rocm_sdk", "test"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=support.clean_env(),
            text=True,
        )

    def test_sound_installation_passes(self) -> None:
        result = self.rocm_sdk_test()
        self.assertEqual(result.returncode, 0, result.stdout)
        self.assertIn("devel_test", result.stdout)
        self.assertIn("skipping the libraries tests", result.stdout)

    def test_missing_tool_fails(self) -> None:
        (self.site / "_rocm_sdk_core" / "bin" / "rocminfo").unlink()
        result = self.rocm_sdk_test()
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("rocm-sdk-core: cannot run rocminfo", result.stdout)

    def test_unloadable_library_fails(self) -> None:
        support.write(self.site / "_rocm_sdk_core" / "lib" / "libbroken.so.1", b"not an ELF file")
        result = self.rocm_sdk_test()
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("libbroken.so.1", result.stdout)
