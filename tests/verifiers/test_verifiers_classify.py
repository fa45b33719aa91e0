"""How a finished shell check is read: passed, failed, or void when it could not measure."""

from __future__ import annotations

import pytest

from anpord.sandboxes import ExecResult
from anpord.verifiers import classify


def res(code: int, out: str = "", err: str = "", timed_out: bool = False) -> ExecResult:
    return ExecResult(code, out, err, timed_out)


@pytest.mark.parametrize(
    ("cmd", "result", "step", "status", "message"),
    [
        ("test -f x", res(0), None, "passed", "passed"),
        (
            "pytest -q",
            res(0, "....\n4 passed in 0.1s\n"),
            None,
            "passed",
            "passed: 4 passed in 0.1s",
        ),
        (
            "pytest -q",
            res(1, "F.\n1 failed, 1 passed in 0.1s\n"),
            None,
            "failed",
            "exit 1: 1 failed, 1 passed in 0.1s",
        ),
        ("a && b", res(2, "", "b: boom\n"), "b", "failed", "exit 2 at `b`: b: boom"),
        (
            "pytest -q",
            res(5, "\nno tests ran in 0.01s\n"),
            None,
            "void",
            "ran no test ('no tests ran')",
        ),
        ("pytest -q", res(5, "weird output\n"), None, "void", "ran no test (pytest exit 5)"),
        (
            "pytest",
            res(4, "collected 0 items\n"),
            None,
            "void",
            "ran no test ('collected 0 items')",
        ),
        (
            "python -m unittest",
            res(0, "", "Ran 0 tests in 0.000s\n\nOK\n"),
            None,
            "void",
            "ran no test ('Ran 0 tests')",
        ),
        ("runner", res(0, "0 tests\n"), None, "void", "ran no test ('0 tests')"),
        (
            "mytool",
            res(127, "", "bash: line 1: mytool: command not found\n"),
            "mytool",
            "void",
            "could not run (exit 127): bash: line 1: mytool: command not found",
        ),
        (
            "./t.sh",
            res(126, "", "bash: line 1: ./t.sh: Permission denied\n"),
            "./t.sh",
            "void",
            "could not run (exit 126): bash: line 1: ./t.sh: Permission denied",
        ),
        (
            "cd app && jest",
            res(1, "", "sh: 1: jest: not found\n"),
            "jest",
            "void",
            "could not run at `jest`: sh: 1: jest: not found",
        ),
        (
            "python -m pytest",
            res(1, "", "/usr/bin/python3: No module named pytest\n"),
            "python -m pytest",
            "void",
            "could not run: No module named pytest",
        ),
        ("false", res(1), "false", "failed", "exit 1"),  # silent but real: not a void cause
        ("test -f out.txt", res(1), None, "failed", "exit 1"),
        ("a && test -f x", res(1), "test -f x", "failed", "exit 1 at `test -f x`"),
        (
            "python -m pytest",
            res(
                1,
                "F\nE   ModuleNotFoundError: No module named 'solution'\n1 failed in 0.1s\n",
            ),
            None,
            "failed",
            "exit 1: 1 failed in 0.1s",
        ),
        (
            "python -c 'import solution'",
            res(
                1,
                "",
                "Traceback (most recent call last):\nModuleNotFoundError: No module named 'solution'\n",
            ),
            None,
            "failed",
            "exit 1: ModuleNotFoundError: No module named 'solution'",
        ),
        (
            "checker",
            res(1, "", "ModuleNotFoundError: No module named 'yaml'\n"),
            None,
            "void",
            "could not run: No module named 'yaml'",
        ),
        ("sleep 9", res(-9, timed_out=True), None, "failed", "timed out after 3s"),
        (
            "echo 'a",
            res(2, "", "bash: -c: line 1: unexpected EOF while looking for matching `''\n"),
            None,
            "void",
            "the command is not valid bash: bash: -c: line 1: unexpected EOF while looking for matching `''",
        ),
    ],
)
def test_classify(
    cmd: str, result: ExecResult, step: str | None, status: str, message: str
) -> None:
    assert classify(cmd, result, step, timeout=3) == (status, message)


@pytest.mark.parametrize(
    "output",
    [
        "Ran 10 tests in 0.2s\n\nFAILED (failures=1)\n",  # "Ran 10 tests" is not "Ran 0 tests"
        "10 tests, 1 failure\n",
        "0 tests failed, 2 errors\n",
        "a test said: user not found\n",  # not the command itself
        "Error: permission denied opening db.sqlite\n",
    ],
)
def test_phrases_match_whole_so_real_failures_stay_failed(output: str) -> None:
    assert classify("make test", res(1, output), "make test")[0] == "failed"


def test_a_zero_test_suite_beside_suites_that_ran_is_not_void() -> None:
    cargo = "running 3 tests\ntest result: ok. 3 passed\n   Doc-tests x\nrunning 0 tests\ntest result: ok. 0 passed\n"
    assert classify("cargo test", res(0, cargo))[0] == "passed"
