"""The package type-checks: ``python -m mypy`` (configured in pyproject's ``[tool.mypy]``: all of
``src/``) reports no error. Part of the suite, so CI's test command checks it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mypy  # noqa: F401 - in the test extra; a machine without it fails this test, never skips it
import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_mypy_is_clean_on_src(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout
