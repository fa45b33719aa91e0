"""The watchdog's clean-up of a container a killed runner left: it runs the CLI the note names,
with the settings the note holds, and removes the note only once the container is gone."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from anpord.sandboxes._watchdog import remove_noted_container

# A stand-in container CLI: records how it was called, and fails when told to.
CLI = """#!{python}
import json, os, sys
with open({out!r}, "w") as f:
    json.dump({{"argv": sys.argv[1:], "env": dict(os.environ)}}, f)
sys.exit(int(os.environ.get("FAIL", "0")))
"""


def _cli(tmp_path: Path) -> tuple[Path, Path]:
    out = tmp_path / "called.json"
    cli = tmp_path / "cli"
    cli.write_text(CLI.format(python=sys.executable, out=str(out)))
    cli.chmod(0o755)
    return cli, out


def test_the_noted_cli_removes_the_container_with_the_noted_settings(tmp_path: Path) -> None:
    cli, out = _cli(tmp_path)
    note = tmp_path / "inst-1.container"
    note.write_text(f"{cli}\nDOCKER_HOST=unix:///run/x.sock?a=b\nnot a setting\nCONTEXT=\n")
    remove_noted_container(str(note))
    called = json.loads(out.read_text())
    assert called["argv"] == ["rm", "-f", "-t", "0", "inst-1"]
    assert called["env"]["DOCKER_HOST"] == "unix:///run/x.sock?a=b"  # split at the first '=' only
    assert called["env"]["CONTEXT"] == ""
    assert "not a setting" not in " ".join(called["env"])
    assert not note.exists()


def test_the_note_stays_when_the_cli_fails(tmp_path: Path) -> None:
    cli, out = _cli(tmp_path)
    note = tmp_path / "inst-2.container"
    note.write_text(f"{cli}\nFAIL=1\n")
    remove_noted_container(str(note))
    assert out.exists() and note.exists()
