"""End-to-end runs of the coding-agent harnesses: a project whose variants run a stand-in CLI
(``standin.py`` installed as ``claude``, ``codex``, ``gemini``, ``opencode`` in a folder put first
on the trial's PATH and mounted into bwrap), run through the real ``anpord eval``."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from project_support import Project, Run, build_project

HERE = Path(__file__).resolve().parent
STREAMS = HERE.parents[1] / "fixtures" / "harness-streams"
CLIS = ("claude", "codex", "gemini", "opencode")
# The credential each stand-in run is given (declared as the variant's secret).
KEYS = {"claude": "ANTHROPIC_API_KEY", "codex": "CODEX_API_KEY", "gemini": "GEMINI_API_KEY",
        "opencode": "ANTHROPIC_API_KEY"}
SECRET = "sk-standin-test-0123456789abcdef"
SANDBOXES = ("local", "bwrap")


def install_standins(folder: Path) -> Path:
    """The four stand-ins and the recorded streams they replay, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in CLIS:
        exe = folder / name
        shutil.copyfile(HERE / "standin.py", exe)
        exe.chmod(0o755)
    shutil.copytree(STREAMS, folder / "streams", dirs_exist_ok=True)
    return folder


def variant(cli: str, sandbox: str, standins: Path, *, name: str | None = None,
            model: str | None = None, secrets: Sequence[str] | None = None,
            path: str | None = None, **extra: Any) -> str:
    """A ``Variant(...)`` expression running ``cli``'s stand-in."""
    fields: dict[str, Any] = {
        "harness": cli,
        "model": model,
        "sandbox": sandbox,
        "name": name,
        "env": {"PATH": path if path is not None else f"{standins}:/usr/bin:/bin"},
        "secrets": list(secrets if secrets is not None else [KEYS[cli]]),
        "mounts": [str(standins)],
        **extra,
    }
    return "Variant(" + ", ".join(f"{k}={v!r}" for k, v in fields.items()) + ")"


def config(variants: Sequence[str], timeout: float = 30) -> str:
    return (
        "from anpord import Variant, define_eval_config\n"
        f"config = define_eval_config(variants=[{', '.join(variants)}], timeout={timeout})\n"
    )


def coding_project(base: Path, variants: Sequence[str], files: Mapping[str, str],
                   timeout: float = 30) -> Project:
    project = build_project(base, {}, config=config(variants, timeout), agents=False)
    for name, text in files.items():
        path = project.path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    (project.folder / "tmp").mkdir()
    return project


def run(project: Project, *args: str, env: Mapping[str, str] | None = None,
        timeout: float = 120) -> Run:
    """``anpord eval`` with every stand-in's credential set and the trials' temp folders kept
    under the project (so a test can see that none is left)."""
    full = {name: SECRET for name in KEYS.values()}
    full["TMPDIR"] = str(project.folder / "tmp")
    full.update(env or {})
    done = project.run(*args, env=full, timeout=timeout)
    leftovers = list((project.folder / "tmp").iterdir())
    assert leftovers == [], f"a trial left {leftovers}"
    return done


def reports(run: Run, case_id: str, cli: str, trial: int = 0) -> list[dict[str, Any]]:
    """What the stand-in said it got, one per turn (its ``standin.report`` line, kept raw)."""
    return [e["raw"] for e in run.events(case_id, trial) if e["type"] == f"{cli}.standin.report"]


def of_type(run: Run, case_id: str, kind: str, trial: int = 0) -> list[dict[str, Any]]:
    return [e for e in run.events(case_id, trial) if e["type"] == kind]
