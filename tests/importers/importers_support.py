"""Helpers for the importer tests: fixture paths, loading a generated module, and a
stand-in for the validate context (only ``answer()`` is read by imported checks)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "import"
OWN = FIXTURES / "anpord"
WILD = FIXTURES / "wild"


class FakeContext:
    """What a validate function is handed: here, only the agent's final answer."""

    def __init__(self, answer: str) -> None:
        self._answer = answer

    async def answer(self) -> str:
        return self._answer


def load(source: str, name: str = "imported.eval.py") -> dict[str, Any]:
    """Compile and run a generated module, returning its namespace."""
    namespace: dict[str, Any] = {"__name__": "imported_suite"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. an invalid escape would be a SyntaxWarning
        code = compile(source, name, "exec")
    exec(code, namespace)  # noqa: S102 - the module under test
    return namespace


def verdict(case: Any, answer: str) -> tuple[bool, str]:
    result = asyncio.run(case.validate(FakeContext(answer)))
    assert isinstance(result, tuple) and len(result) == 2
    return result


def anpord_script() -> str:
    """The installed ``anpord`` console script, next to this interpreter when it is there."""
    beside = Path(sys.executable).with_name("anpord")
    if beside.exists():
        return str(beside)
    found = shutil.which("anpord")
    if found is None:
        pytest.fail("the anpord console script is not installed (pip install -e '.[test]')")
    return found


def run_anpord(
    *args: str, cwd: Path | str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [anpord_script(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=timeout,
        check=False,
    )
