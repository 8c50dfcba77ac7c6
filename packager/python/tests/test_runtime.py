"""`rocm_sdk.find_libraries`, `preload_libraries`, `initialize_process` (SPEC §4)."""

import json
from typing import Any, Optional

from tests import support

PROBE = """
import json, sys, warnings
import rocm_sdk
def attempt(function):
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = function()
        return {"ok": repr(value), "warnings": [str(w.message) for w in caught]}
    except Exception as error:
        return {"error": type(error).__name__, "message": str(error)}
"""


class RuntimeTest(support.TempDirTest):
    def setUp(self) -> None:
        super().setUp()
        self.site = support.make_site(self.tmp, families=["gfx1030", "gfx90a"], kpack=True)
        self.library = support.compile_shared_library(self.site / "_rocm_sdk_core" / "lib" / "libamdhip64.so.6")

    def probe(self, expression: str, env: Optional[dict[str, str]] = None) -> Any:
        code = PROBE + "print(json.dumps(attempt(lambda: %s)))\n" % expression
        result = support.run_python(code, site=self.site, env=support.clean_env(env), check=True)
        self.assertEqual(result.stderr, "", "the runtime must print nothing unless ROCM_SDK_VERBOSE=1")
        return json.loads(result.stdout)

    def test_find_and_preload(self) -> None:
        self.assertEqual(self.probe("rocm_sdk.find_libraries('amdhip64')")["ok"], repr([self.library]))
        loaded = self.probe("(rocm_sdk.preload_libraries('amdhip64'), sorted(rocm_sdk._ALL_CDLLS))[1]")
        self.assertEqual(loaded["ok"], repr(["amdhip64"]))

    def test_absent_optional_library_is_left_out(self) -> None:
        self.assertEqual(self.probe("rocm_sdk.find_libraries('rocdxg', 'amdhip64')")["ok"], repr([self.library]))

    def test_unknown_shortname(self) -> None:
        result = self.probe("rocm_sdk.find_libraries('nope')")
        self.assertEqual(result["error"], "ModuleNotFoundError")
        self.assertIn("unknown ROCm library 'nope'", result["message"])

    def test_missing_package_names_the_extra(self) -> None:
        result = self.probe("rocm_sdk.preload_libraries('hipblas')")
        self.assertEqual(result["error"], "ModuleNotFoundError")
        self.assertIn('pip install "rocm[libraries]"', result["message"])

    def test_missing_library_file(self) -> None:
        result = self.probe("rocm_sdk.find_libraries('hiprtc')")
        self.assertEqual(result["error"], "FileNotFoundError")
        self.assertIn("libhiprtc.so*", result["message"])

    def test_preload_list_from_the_environment(self) -> None:
        ok = self.probe(
            "(rocm_sdk.initialize_process(), sorted(rocm_sdk._ALL_CDLLS))[1]",
            {"ROCM_SDK_PRELOAD_LIBRARIES": " ; amdhip64, ;"},
        )
        self.assertEqual(ok["ok"], repr(["amdhip64"]))
        ignored = self.probe(
            "(rocm_sdk.initialize_process(env_override=False), sorted(rocm_sdk._ALL_CDLLS))[1]",
            {"ROCM_SDK_PRELOAD_LIBRARIES": "nope"},
        )
        self.assertEqual(ignored["ok"], repr([]))
        bad = self.probe("rocm_sdk.initialize_process()", {"ROCM_SDK_PRELOAD_LIBRARIES": "amdhip64;nope"})
        self.assertEqual(bad["error"], "RuntimeError")
        self.assertIn("ROCM_SDK_PRELOAD_LIBRARIES='amdhip64;nope'", bad["message"])

    def test_preload_shortnames_argument(self) -> None:
        result = self.probe(
            "(rocm_sdk.initialize_process(preload_shortnames=['amdhip64']), sorted(rocm_sdk._ALL_CDLLS))[1]"
        )
        self.assertEqual(result["ok"], repr(["amdhip64"]))

    def test_version_check(self) -> None:
        matching = self.probe("rocm_sdk.initialize_process(check_version='7.12.*', fail_on_version_mismatch=True)")
        self.assertEqual(matching, {"ok": "None", "warnings": []})
        regex = self.probe(
            "rocm_sdk.initialize_process("
            "check_version=__import__('re').compile(r'7\\.12'), fail_on_version_mismatch=True)"
        )
        self.assertEqual(regex, {"ok": "None", "warnings": []})
        # Both messages begin with the reference's sentence, word for word (SPEC §4).
        reference = (
            "The program was compiled against a ROCm version matching '%s' but the installed "
            "ROCm version in this Python environment is " + support.VERSION + "."
        )
        warned = self.probe("rocm_sdk.initialize_process(check_version='6.*')")
        self.assertEqual(len(warned["warnings"]), 1)
        self.assertTrue(warned["warnings"][0].startswith(reference % "6.*"), warned["warnings"][0])
        raised = self.probe("rocm_sdk.initialize_process(check_version='6.*', fail_on_version_mismatch=True)")
        self.assertEqual(raised["error"], "RuntimeError")
        self.assertTrue(raised["message"].startswith(reference % "6.*"), raised["message"])
        regex = self.probe(
            "rocm_sdk.initialize_process("
            "check_version=__import__('re').compile(r'6\\.0'), fail_on_version_mismatch=True)"
        )
        self.assertEqual(regex["error"], "RuntimeError")
        self.assertTrue(regex["message"].startswith(reference % "6\\.0"), regex["message"])

    def test_unknown_keywords_are_accepted(self) -> None:
        self.assertEqual(self.probe("rocm_sdk.initialize_process(future_option=1)")["ok"], "None")

    def test_cli_version_and_targets(self) -> None:
        support.write(
            self.site / "_rocm_sdk_core" / "share" / "therock" / "dist_info.json",
            '{"dist_amdgpu_targets": "gfx1030;gfx90a"}',
        )
        version = support.run_python(
            "import rocm_sdk.__main__ as m, sys; sys.exit(m.main(['version']))", site=self.site, check=True
        )
        self.assertEqual(version.stdout.strip(), support.VERSION)
        targets = support.run_python(
            "import rocm_sdk.__main__ as m, sys; sys.exit(m.main(['targets']))", site=self.site, check=True
        )
        self.assertEqual(targets.stdout.strip(), "gfx1030;gfx90a")
        path = support.run_python(
            "import rocm_sdk.__main__ as m, sys; sys.exit(m.main(['path', '--root']))", site=self.site
        )
        self.assertEqual(path.returncode, 1)
        self.assertIn('pip install "rocm[devel]"', path.stderr)
