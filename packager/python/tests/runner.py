"""Lists and runs the unit tests of this package for `tests/python/main.rs`, the Rust
harness that reports each under its own name (`test_dist_info::MatchingTest::test_x`).

`python3 -m tests.runner list` prints every test's name, one per line. `python3 -m
tests.runner run REPORT NAME...` runs the named tests, in the order unittest finds them, and
writes to REPORT one JSON object per line and test: `{"name", "outcome", "details"}`, the
outcome `passed` or `failed` (a skip is a failure: no test here skips quietly), the details
the tracebacks and the output the test printed. An error outside any test (a class's or a
module's set-up) is written with the name `<module>::<set-up>`: the harness gives it to
each test of that module that has no result of its own.
"""

import io
import json
import sys
import unittest
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Optional

if TYPE_CHECKING:
    # What unittest hands a result about an exception (`sys.exc_info()`).
    from _typeshed import OptExcInfo

# Where unittest finds the tests, relative to `packager/python` (the working directory).
START = "tests"
TOP = "."


def name_of(test: unittest.TestCase) -> str:
    """`tests.test_x.Class.test_y` -> `test_x::Class::test_y`; a module that cannot be
    imported is `test_x::import`."""
    test_id = test.id()
    failed_import = "unittest.loader._FailedTest."
    if test_id.startswith(failed_import):
        return _short(test_id[len(failed_import) :]) + "::import"
    return "::".join(_short(test_id).split("."))


def _short(dotted: str) -> str:
    return dotted[len(START) + 1 :] if dotted.startswith(START + ".") else dotted


def module_of(name: str) -> str:
    return name.split("::", 1)[0]


def each_test(suite: unittest.TestSuite) -> Iterator[unittest.TestCase]:
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from each_test(item)
        else:
            yield item


def discover() -> unittest.TestSuite:
    return unittest.TestLoader().discover(START, top_level_dir=TOP)


class Report(unittest.TestResult):
    """One line of JSON per finished test, in REPORT; a test's subtests fold into it."""

    def __init__(self, out: IO[str]) -> None:
        super().__init__()
        # The output a test prints is kept per test and reported with a failure.
        self.buffer = True
        self.out = out
        self.problems: list[str] = []

    def startTest(self, test: unittest.TestCase) -> None:
        self.problems = []
        super().startTest(test)

    def addError(self, test: unittest.TestCase, err: "OptExcInfo") -> None:
        super().addError(test, err)
        self._note(test, self.errors[-1][1])

    def addFailure(self, test: unittest.TestCase, err: "OptExcInfo") -> None:
        super().addFailure(test, err)
        self._note(test, self.failures[-1][1])

    def addSubTest(self, test: unittest.TestCase, subtest: unittest.TestCase, err: "Optional[OptExcInfo]") -> None:
        failures, errors = len(self.failures), len(self.errors)
        super().addSubTest(test, subtest, err)
        for _, text in self.failures[failures:] + self.errors[errors:]:
            self.problems.append("%s\n%s" % (subtest.id(), text))

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        self.problems.append("skipped: %s" % reason)

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        self.problems.append("passed, but is marked as an expected failure")

    def _note(self, test: object, text: str) -> None:
        if isinstance(test, unittest.TestCase):
            self.problems.append(text)
        else:
            # A set-up outside any test (`setUpClass (tests.test_x.Class)`): said once.
            self._write("%s::<set-up>" % module_of(name_of_holder(test)), "failed", text)

    def stopTest(self, test: unittest.TestCase) -> None:
        super().stopTest(test)
        outcome = "failed" if self.problems else "passed"
        self._write(name_of(test), outcome, "\n".join(self.problems))

    def _write(self, name: str, outcome: str, details: str) -> None:
        self.out.write(json.dumps({"name": name, "outcome": outcome, "details": details}) + "\n")
        self.out.flush()


def name_of_holder(holder: object) -> str:
    """The module of an error outside a test: `setUpClass (tests.test_x.Class)` names it."""
    description = str(holder)
    inside = description[description.find("(") + 1 : description.rfind(")")] if "(" in description else description
    return "::".join(_short(inside).split("."))


def run(report_path: str, names: list[str]) -> int:
    wanted = set(names)
    suite = unittest.TestSuite(test for test in each_test(discover()) if name_of(test) in wanted)
    with open(report_path, "w", encoding="utf-8") as report:
        result = Report(report)
        suite.run(result)
    return 0 if result.wasSuccessful() else 1


def main(argv: Optional[list[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["list"]:
        listing = io.StringIO()
        for test in each_test(discover()):
            listing.write(name_of(test) + "\n")
        sys.stdout.write(listing.getvalue())
        return 0
    if args[:1] == ["run"] and len(args) >= 2:
        return run(args[1], args[2:])
    print("usage: python3 -m tests.runner list | run REPORT NAME...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
