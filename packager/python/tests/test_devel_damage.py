"""A damaged devel tarball or a failed expansion: refused or cleaned up, never half done.

Each fault is made for real: a tarball cut short or garbled, a RECORD hash that does not
match, members that fail mid-way, a destination that fills up (a small tmpfs as root, a
file size limit everywhere), and a killed expansion followed by a real `pip uninstall`.
"""

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import venv

from tests import support
from tests.test_devel import DEVEL, GOOD_TREE, DevelSite, listing

BIG = [(DEVEL + "/share/big%d.bin" % index, "file", os.urandom(256 * 1024)) for index in range(8)]


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "sha256=" + digest


class DamagedTarballTest(DevelSite):
    def assert_refused_untouched(self, result: support.Completed, *needles: str) -> None:
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        self.assertEqual(len([line for line in result.stderr.splitlines() if line]), 1, result.stderr)
        for needle in needles:
            self.assertIn(needle, result.stderr)
        self.assertTrue(self.tarball.exists(), "a damaged tarball is kept, so a reinstall can retry")
        self.assertFalse((self.site / DEVEL).exists(), "nothing of the tree was written")

    def test_a_tarball_cut_short_is_refused(self) -> None:
        # Cut inside a member, and exactly after a member (where tarfile stops quietly).
        for label in ("mid-member", "at a header"):
            with self.subTest(label):
                self.tmp = self.tmp / label.replace(" ", "_")
                self.tmp.mkdir()
                self.make(tree=GOOD_TREE + BIG)
                data = self.tarball.read_bytes()
                cut = 8 * 1024 if label == "mid-member" else 512 * 3
                self.tarball.write_bytes(data[:cut])
                before = listing(self.site)
                result = self.init()
                self.assert_refused_untouched(
                    result, "is damaged", str(self.tarball), "--force-reinstall --no-cache-dir rocm-sdk-devel"
                )
                self.assertEqual(listing(self.site), before)

    def test_the_tarball_must_match_its_record_hash(self) -> None:
        self.make(tree=GOOD_TREE + BIG)
        data = self.tarball.read_bytes()
        rows = self.record.read_text().replace(
            "rocm_sdk_devel/_devel.tar,,", "rocm_sdk_devel/_devel.tar,%s,%d" % (record_hash(data), len(data))
        )
        self.record.write_text(rows)
        # Same length, one byte of a member changed: the tar itself still reads whole.
        damaged = bytearray(data)
        damaged[len(data) // 2] ^= 0xFF
        self.tarball.write_bytes(bytes(damaged))
        result = self.init()
        self.assert_refused_untouched(result, "does not match the devel package's RECORD")
        # The right bytes back: it expands.
        self.tarball.write_bytes(data)
        self.assertEqual(self.init().returncode, 0)
        self.assertFalse(self.tarball.exists())

    def test_the_hint_names_the_family_devel_package(self) -> None:
        self.make()
        self.tarball.write_bytes(self.tarball.read_bytes()[:1024])
        code = (
            "import sys\n"
            "from rocm_sdk._devel_integrity import open_checked, DamagedTarballError\n"
            "try:\n    open_checked(sys.argv[1], 'rocm-sdk-devel-gfx110x-all')\n"
            "except DamagedTarballError as error:\n    print(error)\n"
        )
        result = support.run_python(code, site=self.site, args=[self.tarball])
        self.assertIn("pip install --force-reinstall --no-cache-dir rocm-sdk-devel-gfx110x-all", result.stdout)

    def test_a_cut_or_garbage_xz_tarball_gives_one_line(self) -> None:
        for label in ("cut", "garbage"):
            with self.subTest(label):
                self.tmp = self.tmp / label
                self.tmp.mkdir()
                self.make(tree=GOOD_TREE + BIG, compression="xz")
                data = self.tarball.read_bytes()
                self.tarball.write_bytes(data[: len(data) // 2] if label == "cut" else os.urandom(4096))
                result = self.init()
                self.assert_refused_untouched(result, "is damaged", str(self.tarball))


class FailedExpansionTest(DevelSite):
    def test_bad_members_are_refused_before_anything_is_written(self) -> None:
        cases: dict[str, list[support.TarEntry]] = {
            "empty link": [(DEVEL + "/__init__.py", "file", b""), (DEVEL + "/lib/libx.so", "link", "")],
            "under a file": [
                (DEVEL + "/__init__.py", "file", b""),
                (DEVEL + "/a", "file", b"x"),
                (DEVEL + "/a/b", "file", b"y"),
            ],
            "link to its own directory": [(DEVEL + "/__init__.py", "file", b""), (DEVEL + "/lib/up", "link", "..")],
        }
        for result in self.each_refused(cases, lambda: self.site):
            self.assertNotIn("Errno", result.stderr)

    def assert_failed_cleanly(self, result: support.Completed) -> None:
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        self.assertIn("cannot expand the devel tree: writing %s" % (self.site / DEVEL), result.stderr)
        self.assertFalse((self.site / DEVEL).exists(), "the partial tree was removed")
        self.assertTrue(self.tarball.exists(), "the tarball stays for a retry")

    def test_a_file_size_limit_midway_removes_the_partial_tree(self) -> None:
        # Stands in for a full disk wherever a tmpfs cannot be mounted: writes past the
        # limit fail with EFBIG as they would with ENOSPC.
        self.make(tree=GOOD_TREE + BIG)
        code = (
            "import resource, signal, sys\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (200 * 1024, resource.RLIM_INFINITY))\n"
            "import rocm_sdk.__main__ as m\n"
            "sys.exit(m.main(['init', '--quiet']))\n"
        )
        result = support.run_python(code, site=self.site)
        self.assert_failed_cleanly(result)
        self.assertIn("File too large", result.stderr)
        self.assertEqual(self.init().returncode, 0, "a retry without the limit succeeds")

    def test_a_full_tmpfs_midway_removes_the_partial_tree(self) -> None:
        if os.geteuid() != 0 or shutil.which("mount") is None:
            print(
                "skipped: mounting a tmpfs needs root and mount(8); the file size limit test covers it", file=sys.stderr
            )
            return
        small = self.tmp / "small"
        small.mkdir()
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(small)], stderr=subprocess.PIPE)
        if mounted.returncode != 0:
            print("skipped: cannot mount a tmpfs here: %s" % mounted.stderr.decode().strip(), file=sys.stderr)
            return
        self.addCleanup(subprocess.run, ["umount", str(small)])
        self.tmp = small
        self.make(tree=GOOD_TREE + BIG)
        result = self.init()
        self.assert_failed_cleanly(result)
        self.assertIn("No space left on device", result.stderr)
        self.assertIn("free space", result.stderr)

    def test_pip_uninstall_removes_a_half_expanded_tree(self) -> None:
        # A real venv, so that pip treats the site as its own environment.
        env_dir = self.tmp / "venv"
        venv.EnvBuilder(with_pip=False).create(str(env_dir))
        python = env_dir / "bin" / "python"
        site = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            stdout=subprocess.PIPE,
            check=True,
            text=True,
        ).stdout.strip()
        self.tmp = self.tmp / "under"
        self.tmp.mkdir()
        self.make(tree=GOOD_TREE + BIG)
        for entry in os.listdir(str(self.site)):
            shutil.move(str(self.site / entry), os.path.join(site, entry))
        self.site = type(self.site)(site)
        self.tarball = self.site / "rocm_sdk_devel" / "_devel.tar"
        kill_midway = (
            "import os, signal, sys\n"
            "import rocm_sdk._devel_tree as tree\n"
            "original = tree._extract_file\n"
            "count = [0]\n"
            "def dying(*args):\n"
            "    original(*args)\n"
            "    count[0] += 1\n"
            "    if count[0] == 4:\n"
            "        os.kill(os.getpid(), signal.SIGKILL)\n"
            "tree._extract_file = dying\n"
            "import rocm_sdk.__main__ as m\n"
            "sys.exit(m.main(['init', '--quiet']))\n"
        )
        killed = subprocess.run([str(python), "-c", kill_midway], env=support.clean_env(), stderr=subprocess.PIPE)
        self.assertEqual(killed.returncode, -9, killed.stderr)
        self.assertTrue((self.site / DEVEL / "share").is_dir(), "the kill came mid-way")
        uninstall = subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(python), "uninstall", "-y", "rocm-sdk-devel"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=support.clean_env(),
        )
        self.assertEqual(
            uninstall.returncode, 0, "pip is needed by this test (apt-get install python3-pip):\n" + uninstall.stdout
        )
        self.assertFalse((self.site / DEVEL).exists(), uninstall.stdout)
        self.assertFalse((self.site / "rocm_sdk_devel").exists(), uninstall.stdout)
