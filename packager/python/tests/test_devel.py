"""Devel expansion, its safety rules and robustness, device links, trampolines (SPEC §4)."""

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Optional

from tests import support

DEVEL = "_rocm_sdk_devel"
INIT = "import rocm_sdk.__main__ as m, sys; sys.exit(m.main(['init', '--quiet']))"
GOOD_TREE: list[support.TarEntry] = [
    (DEVEL, "dir", None),
    (DEVEL + "/__init__.py", "file", b"# devel platform\n"),
    (DEVEL + "/include/hip.h", "file", b"#define HIP 1\n"),
    (DEVEL + "/lib/libfoo.so", "link", "../../_rocm_sdk_core/lib/libfoo.so"),
    (DEVEL + "/lib/libfoo.so.1", "link", "libfoo.so"),
    (DEVEL + "/lib/llvm", "link", "../../_rocm_sdk_core/lib/llvm"),
    (DEVEL + "/bin/amdclang", "link", "../lib/llvm/bin/clang"),
    (DEVEL + "/bin/clang-alias", "link", "../lib/llvm/bin/clang"),
    (DEVEL + "/bin/hipcc", "exe", b'#!/bin/sh\necho devel-hipcc "$@"\n'),
]


def listing(root: Path) -> list[str]:
    """Every path under `root` (for "nothing was written" checks)."""
    found = []
    for directory, subdirectories, files in os.walk(str(root)):
        for name in subdirectories + files:
            found.append(os.path.relpath(os.path.join(directory, name), str(root)))
    return sorted(found)


class DevelSite(support.TempDirTest):
    """A site-packages with rocm, core and an unexpanded devel wheel."""

    kpack = False
    site: Path
    tarball: Path
    record: Path

    def make(
        self,
        tree: Sequence[support.TarEntry] = GOOD_TREE,
        compression: str = "",
        families: Sequence[str] = ("gfx110X-all",),
        version: str = support.VERSION,
    ) -> None:
        options: dict[str, Any] = {"families": list(families), "kpack": self.kpack, "version": version}
        self.site = support.make_site(self.tmp, **options)
        core = self.site / "_rocm_sdk_core"
        support.write(core / "lib" / "libfoo.so", b"\x7fELF core library")
        support.write(core / "lib" / "llvm" / "bin" / "clang", "#!/bin/sh\necho clang\n", mode=0o755)
        support.write(core / "bin" / "rocminfo", "#!/bin/sh\necho core-rocminfo\n", mode=0o755)
        support.install_pure(self.site, support.PYTHON_ROOT / "devel", "rocm_sdk_devel", logical="devel", **options)
        name = "_devel.tar" + ("." + compression if compression else "")
        self.tarball = support.write(self.site / "rocm_sdk_devel" / name, support.tar_bytes(tree, compression))
        self.record = support.add_dist(
            self.site,
            "rocm-sdk-devel",
            version,
            [
                "rocm_sdk_devel/__init__.py",
                "rocm_sdk_devel/_dist_info.py",
                "rocm_sdk_devel/_dist_info_data.py",
                "rocm_sdk_devel/" + name,
            ],
        )

    def each_refused(
        self, cases: dict[str, list[support.TarEntry]], watched: Callable[[], Path]
    ) -> Iterator[support.Completed]:
        """Makes each tree of `cases` ({label: tree}) in a directory of its own, runs the
        expansion, and checks it was refused with nothing written under `watched()`; yields
        each result inside its subTest, for the caller's own checks."""
        for label, tree in cases.items():
            with self.subTest(label):
                self.tmp = self.tmp / label.replace(" ", "_")
                self.tmp.mkdir()
                self.make(tree=tree)
                before = listing(watched())
                result = self.init()
                self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
                self.assertIn("refusing to expand", result.stderr)
                self.assertEqual(listing(watched()), before, "nothing was written")
                yield result

    def init(self, env: Optional[dict[str, str]] = None) -> support.Completed:
        return support.run_python(INIT, site=self.site, env=support.clean_env(env))

    def record_paths(self, record: Optional[Path] = None) -> list[str]:
        lines = (record or self.record).read_text().splitlines()
        return [line.rsplit(",", 2)[0] for line in lines if line]

    def assert_good_tree(self) -> None:
        devel = self.site / DEVEL
        self.assertFalse(self.tarball.exists(), "the tarball is deleted once expanded")
        self.assertEqual((devel / "include" / "hip.h").read_bytes(), b"#define HIP 1\n")
        for hard in ("lib/libfoo.so", "lib/libfoo.so.1"):
            self.assertFalse((devel / hard).is_symlink(), hard)
            self.assertTrue(
                os.path.samefile(str(devel / hard), str(self.site / "_rocm_sdk_core" / "lib" / "libfoo.so"))
            )
        self.assertTrue((devel / "lib" / "llvm").is_symlink(), "directory symlinks stay")
        self.assertTrue((devel / "bin" / "amdclang").is_symlink(), "compiler drivers stay symlinks")
        self.assertEqual(os.readlink(str(devel / "bin" / "amdclang")), "../lib/llvm/bin/clang")
        self.assertFalse((devel / "bin" / "clang-alias").is_symlink())
        self.assertTrue(os.access(str(devel / "bin" / "hipcc"), os.X_OK))
        paths = self.record_paths()
        self.assertEqual(len(paths), len(set(paths)), "RECORD has no duplicates")
        for name, kind, _ in GOOD_TREE:
            if kind != "dir":
                self.assertIn(name, paths)


class ExpansionTest(DevelSite):
    def test_init_expands_once(self) -> None:
        self.make()
        result = self.init()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assert_good_tree()
        before = self.record.read_text()
        again = self.init()
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(self.record.read_text(), before, "a second init changes nothing")

    def test_xz_tarball(self) -> None:
        self.make(compression="xz")
        self.assertEqual(self.init().returncode, 0)
        self.assert_good_tree()

    def test_path_prints_the_tree(self) -> None:
        self.make()
        result = support.run_python(
            "import rocm_sdk.__main__ as m, sys; sys.exit(m.main(['path', '--cmake']))", site=self.site
        )
        self.assertEqual(result.stdout.strip(), str(self.site / DEVEL / "lib" / "cmake"))
        self.assert_good_tree()

    def test_eight_concurrent_inits_make_one_tree(self) -> None:
        self.make()
        env = support.clean_env({"PYTHONPATH": str(self.site)})
        processes = [
            subprocess.Popen([sys.executable, "-c", INIT], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(8)
        ]
        for process in processes:
            _, stderr = process.communicate()
            self.assertEqual(process.returncode, 0, stderr.decode())
        self.assert_good_tree()

    def test_killed_expansion_is_retried(self) -> None:
        self.make()
        # Kill the expanding process with SIGKILL after it wrote its second file.
        interrupt = (
            "import os, signal\n"
            "import rocm_sdk._devel_tree as tree\n"
            "original = tree._extract_file\n"
            "count = [0]\n"
            "def dying(*args):\n"
            "    original(*args)\n"
            "    count[0] += 1\n"
            "    if count[0] == 2:\n"
            "        os.kill(os.getpid(), signal.SIGKILL)\n"
            "tree._extract_file = dying\n" + INIT.replace("; sys.exit", "\nsys.exit")
        )
        killed = support.run_python(interrupt, site=self.site)
        self.assertEqual(killed.returncode, -9)
        self.assertTrue(self.tarball.exists(), "an interrupted expansion keeps its tarball")
        self.assertTrue((self.site / DEVEL / "include" / "hip.h").exists(), "the kill came mid-way")
        retried = self.init()
        self.assertEqual(retried.returncode, 0, retried.stderr)
        self.assert_good_tree()

    def test_unsafe_tarballs_are_refused_whole(self) -> None:
        cases: dict[str, list[support.TarEntry]] = {
            "dotdot": [(DEVEL + "/ok.txt", "file", b"x"), (DEVEL + "/../evil", "file", b"x")],
            "outside": [(DEVEL + "/ok.txt", "file", b"x"), ("../evil", "file", b"x")],
            "other dir": [("_rocm_sdk_core/lib/libfoo.so", "file", b"x")],
            "absolute": [("/tmp/evil", "file", b"x")],
            "absolute link": [(DEVEL + "/ok.txt", "file", b"x"), (DEVEL + "/passwd", "link", "/etc/passwd")],
            "escaping link": [(DEVEL + "/up", "link", "../../evil")],
            "through link": [
                (DEVEL + "/core", "link", "../_rocm_sdk_core"),
                (DEVEL + "/core/lib/libfoo.so", "file", b"x"),
            ],
            "link chain": [(DEVEL + "/a", "link", "../_x"), (DEVEL + "/b", "link", "a/../..")],
            "loop": [(DEVEL + "/a", "link", "b"), (DEVEL + "/b", "link", "a"), (DEVEL + "/c", "link", "a/x")],
        }
        for _ in self.each_refused(cases, lambda: self.tmp):
            self.assertFalse((self.tmp.parent / "evil").exists())

    def test_trampoline_runs_tools_from_the_right_tree(self) -> None:
        self.make()
        call = "import sys; sys.argv = ['x', 'arg']; import rocm_sdk_core._cli as cli; cli.%s()"
        hipcc = support.run_python(call % "hipcc", site=self.site)
        self.assertEqual(hipcc.stdout.strip(), "devel-hipcc arg", hipcc.stderr)
        self.assert_good_tree()
        rocminfo = support.run_python(call % "rocminfo", site=self.site)
        self.assertEqual(rocminfo.stdout.strip(), "core-rocminfo")
        missing = support.run_python(call % "rocgdb", site=self.site)
        self.assertEqual(missing.returncode, 127)
        self.assertIn("rocm-sdk-core: cannot run rocgdb", missing.stderr)

    def test_system_info_tools_do_not_expand_devel(self) -> None:
        self.make()
        call = "import sys; sys.argv = ['x']; import rocm_sdk_core._cli as cli; cli.rocminfo()"
        self.assertEqual(support.run_python(call, site=self.site).stdout.strip(), "core-rocminfo")
        self.assertTrue(self.tarball.exists())


class DeviceLinksTest(DevelSite):
    kpack = True

    def add_device(self, target: str, version: str = support.VERSION) -> tuple[str, Path]:
        libraries = self.site / "_rocm_sdk_libraries"
        relpath = "lib/rocblas/library/kernels_%s.co" % target
        support.write(libraries / relpath, b"code object " + target.encode())
        depth = len(relpath.split("/"))
        links = {
            "version": version,
            "links": [{"relpath": relpath, "target": "../" * depth + "_rocm_sdk_libraries/" + relpath}],
        }
        support.write(libraries / ".devel_links" / (target + ".json"), json.dumps(links))
        record = support.add_dist(
            self.site,
            "rocm-sdk-device-" + target,
            version,
            ["_rocm_sdk_libraries/" + relpath, "_rocm_sdk_libraries/.devel_links/%s.json" % target],
        )
        return relpath, record

    def test_links_are_placed_recorded_and_idempotent(self) -> None:
        # A device wheel republished as a post release is of the same release (SPEC §4).
        self.make(families=["gfx1030", "gfx90a"], version="7.12.0")
        support.write(self.site / "_rocm_sdk_libraries" / "__init__.py", "")
        relpath, record = self.add_device("gfx90a", version="7.12.0")
        post_relpath, post_record = self.add_device("gfx1030", version="7.12.0.post1")
        self.assertEqual(self.init().returncode, 0)
        for path, rec in ((relpath, record), (post_relpath, post_record)):
            linked = self.site / DEVEL / path
            self.assertTrue(os.path.samefile(str(linked), str(self.site / "_rocm_sdk_libraries" / path)))
            self.assertIn(DEVEL + "/" + path, self.record_paths(rec))
        before = (record.read_text(), post_record.read_text())
        self.assertEqual(self.init().returncode, 0)
        self.assertEqual((record.read_text(), post_record.read_text()), before)

    def test_the_recorded_tree_root_covers_the_device_links(self) -> None:
        # pip removes a directory whole only when the RECORD it uninstalls lists every file
        # below it, and uv keeps a file that two RECORDs list: so each device link is in its
        # device wheel's RECORD alone, and the devel RECORD lists the tree's root directory,
        # which both installers remove with everything in it.
        self.make(families=["gfx90a"])
        relpath, record = self.add_device("gfx90a")
        self.assertEqual(self.init().returncode, 0)
        devel_paths = self.record_paths()
        self.assertIn(DEVEL, devel_paths)
        self.assertTrue((self.site / DEVEL).is_dir())
        self.assertNotIn(DEVEL + "/" + relpath, devel_paths)
        self.assertIn(DEVEL + "/" + relpath, self.record_paths(record))
        self.assertEqual(devel_paths.count(DEVEL), 1)
        self.assertEqual(self.init().returncode, 0)
        self.assertEqual(self.record_paths(), devel_paths, "a second init records nothing new")

    def test_other_versions_are_skipped(self) -> None:
        self.make(families=["gfx90a"])
        relpath, record = self.add_device("gfx90a", version="6.0.0")
        self.assertEqual(self.init().returncode, 0)
        self.assertFalse((self.site / DEVEL / relpath).exists())
        self.assertNotIn(DEVEL + "/" + relpath, self.record_paths(record))

    def test_reinstalled_device_file_is_relinked(self) -> None:
        self.make(families=["gfx90a"])
        relpath, _ = self.add_device("gfx90a")
        self.assertEqual(self.init().returncode, 0)
        source = self.site / "_rocm_sdk_libraries" / relpath
        source.unlink()
        support.write(source, b"new code object")
        self.assertEqual(self.init().returncode, 0)
        self.assertEqual((self.site / DEVEL / relpath).read_bytes(), b"new code object")
