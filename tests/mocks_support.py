"""Agents and configs for the mock tests: command agents written to a folder of their own and
mounted read-only, run by the system's python3 under bwrap (the venv's is not inside)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path


def write_agent(folder: Path, name: str, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    return path


def config(agent: Path, sandbox: str = "local", extra: str = "") -> str:
    """An ``evals.config.py`` whose one variant runs ``agent`` as a command agent."""
    python = "python3" if sandbox == "bwrap" else sys.executable
    return ("from anpord import Variant, define_eval_config\n"
            f"config = define_eval_config(timeout=30, variants=[Variant(name='cmd', sandbox={sandbox!r}, "
            f"harness={f'command:{python} {agent}'!r}, mounts=[{str(agent.parent)!r}]{extra})])\n")
