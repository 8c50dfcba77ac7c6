"""Post releases (SPEC §2, §3, §4; TheRock's docs/packaging/versioning.md, #7565):
`X.Y.Z.postN` is the release `X.Y.Z` in every comparison we make; `X.Y.(Z+1)` and
`X.Y.Z.1` never are, and dev and pre releases match only themselves. The whole table of
versions, through pip's `packaging` and the release gate too, is tests/it/release_rule.rs."""

import json
import shutil
import unittest
from pathlib import Path
from typing import Any

from tests import support
from tests.test_backend import BackendSupport
from tests.test_runtime import PROBE


class SameReleaseTest(unittest.TestCase):
    def test_which_versions_are_one_release(self) -> None:
        release = support.load_release()
        cases = [
            ("7.12.0", "7.12.0.post1", True),
            ("7.12.0.post1", "7.12.0.post2", True),
            ("1!7.12.0", "1!7.12.0.post3", True),
            ("7.12.0", "7.12.1", False),
            ("7.12.0", "7.12.0.1", False),
            ("7.12.0.dev0", "7.12.0.post1.dev0", False),
            ("7.12.0rc1", "7.12.0rc1.post1", False),
            ("7.12.0+local", "7.12.0.post1", True),
            ("7.12.0", "7.12.0.post1.dev3", True),
            ("7.12.0", "7.12.0.0.1", False),
            ("7.12.0", "7.12.0.0", True),
            ("7.12.0.dev0", "7.12.0.0.dev0", True),
            ("7.12.0.dev0", "7.12.0.dev0", True),
        ]
        for first, second, same in cases:
            self.assertEqual(release.same_release(first, second), same, (first, second))
            self.assertEqual(release.same_release(second, first), same, (second, first))

    def test_specifiers_admit_the_release(self) -> None:
        info = support.load_dist_info()
        self.assertEqual(info.release_specifier("7.12.0"), ">=7.12.0,<7.12.0.0.1")
        self.assertEqual(info.release_specifier("7.12.0.post1"), ">=7.12.0,<7.12.0.0.1")
        self.assertEqual(info.release_specifier("1!7.12.0"), ">=1!7.12.0,<1!7.12.0.0.1")
        self.assertEqual(info.release_specifier("7.12.0+abc"), "==7.12.0+abc")
        self.assertEqual(info.release_specifier("7.12.0.dev0"), "==7.12.0.dev0")
        self.assertEqual(info.release_specifier("7.12.0a20260822"), "==7.12.0a20260822")


class PostReleaseRequirementsTest(BackendSupport):
    def test_a_final_sdist_admits_post_releases_of_its_packages(self) -> None:
        for version in ("7.12.0", "7.12.0.post1"):
            root = self.make_sdist_tree(families=["gfx90a"], kpack=True, version=version)
            requires, extras = self.call(root, "requirements", env={"ROCM_SDK_TARGET_FAMILY": "gfx90a"})
            self.assertEqual(requires, ["rocm-sdk-core>=7.12.0,<7.12.0.0.1"], version)
            self.assertEqual(extras["device"], ["rocm-sdk-device-gfx90a>=7.12.0,<7.12.0.0.1"], version)
            self.assertEqual(extras["libraries"], ["rocm-sdk-libraries>=7.12.0,<7.12.0.0.1"], version)
            # The next version's tree goes where this one was.
            shutil.rmtree(str(root))


class PostReleaseVersionCheckTest(support.TempDirTest):
    def probe(self, site: Path, expression: str) -> Any:
        code = PROBE + "print(json.dumps(attempt(lambda: %s)))\n" % expression
        return json.loads(support.run_python(code, site=site, check=True).stdout)

    def check(self, installed: str, asked: str, matches: bool) -> None:
        site = support.make_site(
            self.tmp / installed / asked.replace("*", "x"), families=["gfx90a"], kpack=True, version=installed
        )
        strict = self.probe(
            site, "rocm_sdk.initialize_process(check_version=%r, fail_on_version_mismatch=True)" % asked
        )
        warned = self.probe(site, "rocm_sdk.initialize_process(check_version=%r)" % asked)
        if matches:
            self.assertEqual(strict, {"ok": "None", "warnings": []}, (installed, asked))
            self.assertEqual(warned, {"ok": "None", "warnings": []}, (installed, asked))
        else:
            self.assertEqual(strict.get("error"), "RuntimeError", (installed, asked, strict))
            self.assertEqual(len(warned["warnings"]), 1, (installed, asked, warned))

    def test_check_version_treats_a_post_release_as_its_release(self) -> None:
        self.check("7.12.0.post1", "7.12.0", True)
        self.check("7.12.0", "7.12.0.post1", True)
        self.check("7.12.0.post1", "7.12.0.post2", True)
        self.check("7.12.0.post1", "7.12.*", True)

    def test_check_version_never_treats_another_release_or_a_dev_release_so(self) -> None:
        self.check("7.12.0.post1", "7.12.1", False)
        self.check("7.12.1", "7.12.0", False)
        self.check("7.12.0.dev0", "7.12.0", False)
        self.check("7.12.0", "7.12.0.dev0", False)

    def test_a_compiled_pattern_sees_the_release(self) -> None:
        site = support.make_site(self.tmp, families=["gfx90a"], kpack=True, version="7.12.0.post1")
        result = self.probe(
            site,
            "rocm_sdk.initialize_process("
            "check_version=__import__('re').compile(r'7\\.12\\.0'), fail_on_version_mismatch=True)",
        )
        self.assertEqual(result, {"ok": "None", "warnings": []})
