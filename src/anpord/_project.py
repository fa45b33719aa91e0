"""Finding the evals root: the folder holding ``evals.config.py`` (DESIGN §2).

Discovery and the fixture loaders both use this search, so a run and a fixture read agree on the
project folder (the root's parent, where ``.anpord/`` lives).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ._errors import UsageError

__all__ = ["CONFIG_NAME", "EVAL_SUFFIX", "find_root", "nearest_config_folder"]

CONFIG_NAME = "evals.config.py"
EVAL_SUFFIX = ".eval.py"


def nearest_config_folder(start: Path) -> Path | None:
    start = start.resolve()
    for folder in [start, *start.parents]:
        if (folder / CONFIG_NAME).is_file():
            return folder
    return None


def find_root(args: Sequence[str]) -> Path:
    """For a path argument that exists, the nearest config at or above it; otherwise
    ``./evals/evals.config.py``; otherwise the nearest config at or above the current folder."""
    for arg in args:
        p = Path(arg)
        if p.exists():
            found = nearest_config_folder(p if p.is_dir() else p.parent)
            if found is not None:
                return found
            if p.is_dir() and (p / "evals" / CONFIG_NAME).is_file():
                return (p / "evals").resolve()  # a project folder: `anpord eval my-project`
            break
    default = Path("evals") / CONFIG_NAME
    if default.is_file():
        return default.parent.resolve()
    found = nearest_config_folder(Path.cwd())
    if found is not None:
        return found
    raise UsageError(
        f"no {CONFIG_NAME} found: create evals/{CONFIG_NAME} (an empty `config = define_eval_config()` "
        "suffices) or run `anpord init`"
    )
