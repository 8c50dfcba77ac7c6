"""`rocm_sdk._requirements`: `Requires-Dist` lines, their markers and specifiers, read with
the standard library as pip's `packaging` reads them (PEP 508, PEP 440, PEP 685)."""

import importlib.util
import sys
import types
import unittest

from tests import support


def _load() -> types.ModuleType:
    # Standard library only, so it loads on its own, without the package around it.
    path = support.PYTHON_ROOT / "meta" / "rocm_sdk" / "_requirements.py"
    spec = importlib.util.spec_from_file_location("_requirements_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


req = _load()


class ParseTest(unittest.TestCase):
    def test_the_forms_split_tools_write(self) -> None:
        cases = [
            ('hipext-device-gfx90a==1.0; extra == "device-gfx90a"', "hipext-device-gfx90a", [("==", "1.0")]),
            (
                "amd-torch-device-gfx942 == 2.9.0; extra == 'device-gfx942'",
                "amd-torch-device-gfx942",
                [("==", "2.9.0")],
            ),
            ("rocm-sdk-core>=7.12.0,<7.12.0.0.1", "rocm-sdk-core", [(">=", "7.12.0"), ("<", "7.12.0.0.1")]),
            ("old (>=1.0, <2)", "old", [(">=", "1.0"), ("<", "2")]),
            ("rocm[device-gfx90a,libraries]==7.12.0", "rocm", [("==", "7.12.0")]),
            ("direct @ https://example.com/direct.whl ; extra == 'x'", "direct", []),
            ("plain", "plain", []),
        ]
        for line, name, clauses in cases:
            with self.subTest(line=line):
                parsed = req.parse_requirement(line)
                self.assertIsNotNone(parsed)
                self.assertEqual((parsed.name, list(parsed.clauses)), (name, clauses))

    def test_what_is_no_requirement_is_refused(self) -> None:
        for line in ["", "not a requirement", "-bad==1", "name==", "name = 1", "na me==1"]:
            with self.subTest(line=line):
                self.assertIsNone(req.parse_requirement(line))

    def test_names_and_extras_compare_normalized(self) -> None:
        self.assertEqual(req.normalize_name("Hipext_Device.gfx90A"), "hipext-device-gfx90a")
        self.assertEqual(req.normalize_extra(" Device_GFX90a "), "device-gfx90a")
        self.assertTrue(req.is_name("torch"))
        for name in ["bad name", "x'; rm -rf ~", "-x", "x-", ""]:
            self.assertFalse(req.is_name(name), name)


class MarkerTest(unittest.TestCase):
    def required(self, marker: str, extra: str = "device-gfx90a") -> bool:
        line = "wheel==1.0" + ("; " + marker if marker else "")
        parsed = req.parse_requirement(line)
        assert parsed is not None, line
        return bool(req.required_by_extra(parsed, extra))

    def test_the_extra_marker_in_every_spelling(self) -> None:
        for marker in [
            'extra == "device-gfx90a"',
            "extra == 'device-gfx90a'",
            'extra=="device_gfx90a"',
            '"device-gfx90a" == extra',
            '(extra == "device-GFX90a")',
            'sys_platform == "%s" and extra == "device-gfx90a"' % sys.platform,
            'extra == "device-gfx90a" or extra == "device-all"',
        ]:
            with self.subTest(marker=marker):
                self.assertTrue(self.required(marker))
                self.assertFalse(self.required(marker, "device-gfx942"))

    def test_what_is_not_the_extras(self) -> None:
        for marker in [
            "",
            'extra == "device-gfx942"',
            'extra != "device-gfx90a"',
            'sys_platform == "no-such-platform" and extra == "device-gfx90a"',
            'extra == "device-gfx90a" and python_version < "3.0"',
            'python_version >= "3"',
            '"amd :: gfx_arch :: gfx90a" in variant_properties',
        ]:
            with self.subTest(marker=marker):
                self.assertFalse(self.required(marker))

    def test_version_variables_compare_as_versions(self) -> None:
        node = req.parse_marker('python_version >= "3.9" and python_full_version != "1.0"')
        self.assertTrue(req.evaluate(node))
        # "3.10" > "3.9" as versions, not as strings.
        self.assertTrue(req.evaluate(req.parse_marker('"3.10" > python_version or python_version >= "3.10"')))

    def test_a_marker_that_does_not_parse_counts_only_by_its_extra_comparison(self) -> None:
        for marker in ['extra == "device-gfx90a" and', '(extra == "device-gfx90a"', 'extra == "device-gfx90a" @@']:
            with self.subTest(marker=marker):
                self.assertRaises(req.MarkerError, req.parse_marker, marker)
                self.assertTrue(self.required(marker))
                self.assertFalse(self.required(marker, "device-gfx942"))
        self.assertFalse(self.required('sys_platform == "linux" and ((('))


class VersionTest(unittest.TestCase):
    def admits(self, specifier: str, version: str) -> bool:
        parsed = req.parse_requirement("x" + specifier)
        assert parsed is not None, specifier
        return bool(req.admits(parsed, version))

    def test_exact_versions(self) -> None:
        for specifier, version, expected in [
            ("==1.0", "1.0", True),
            ("==1.0", "1.0.0", True),
            ("==1.0", "1.0+rocm7", True),
            ("==1.0+rocm7", "1.0", False),
            ("==1.0", "1.0.post1", False),
            ("==1.0", "1.0rc1", False),
            ("==1.0", "0.9", False),
            ("==1.0.*", "1.0.5", True),
            ("==1.0.*", "1.1", False),
            ("!=1.0", "1.0.0", False),
            ("===1.0", "1.0", True),
            ("===1.0", "1.0.0", False),
            ("==7.12.0.dev0", "7.12.0.dev0", True),
            ("==7.12.0.dev0", "7.12.0", False),
            ("==1.0", "not-a-version", False),
            ("==not-a-version", "not-a-version", True),
        ]:
            with self.subTest(specifier=specifier, version=version):
                self.assertEqual(self.admits(specifier, version), expected)

    def test_ranges(self) -> None:
        for specifier, version, expected in [
            (">=7.12.0,<7.12.0.0.1", "7.12.0.post2", True),
            (">=7.12.0,<7.12.0.0.1", "7.12.1", False),
            ("~=1.4.5", "1.4.9", True),
            ("~=1.4.5", "1.5", False),
            ("~=2.2.post3", "2.9", True),
            (">1.0rc1", "1.0", True),
            ("<1.0", "1.0.dev0", True),
            (">=1", "not-a-version", True),
        ]:
            with self.subTest(specifier=specifier, version=version):
                self.assertEqual(self.admits(specifier, version), expected)
