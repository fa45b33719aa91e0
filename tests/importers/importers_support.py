"""Helpers for the importer tests: fixture paths, loading a generated module, and a
stand-in for the validate context (only ``answer()`` is read by imported checks)."""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

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


SRC = Path(__file__).resolve().parents[2] / "src"


def anpord_command() -> list[str]:
    """This checkout's anpord, never a console script on PATH (it may belong to another install)."""
    return [sys.executable, "-m", "anpord"]


def run_anpord(
    *args: str,
    cwd: Path | str | None = None,
    timeout: float = 120,
    memory_limit: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run this checkout's anpord; ``memory_limit`` caps its address space (bytes), so a
    runaway allocation fails the test with a MemoryError instead of taking the machine."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))

    def cap() -> None:
        if memory_limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    return subprocess.run(
        [*anpord_command(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=timeout,
        check=False,
        preexec_fn=cap,
    )
