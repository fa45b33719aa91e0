"""What the history commands share: finding the project, opening its run store, one-line errors."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Store

__all__ = ["CommandError", "fail", "open_history", "project_folder"]


class CommandError(Exception):
    """A history command cannot go on: one line, exit 2."""


def fail(prog: str, message: str, code: int = 2) -> int:
    print(f"{prog}: {message}", file=sys.stderr)
    return code


def project_folder() -> Path:
    """The project folder, found as ``anpord eval`` finds it; from deeper inside a project (say
    ``src/``), the nearest folder above that holds ``.anpord/`` or ``evals/evals.config.py``."""
    from .._project import CONFIG_NAME, find_root

    try:
        return find_root([]).parent
    except UsageError as exc:
        here = Path.cwd().resolve()
        for folder in [here, *here.parents]:
            if (folder / ".anpord").is_dir() or (folder / "evals" / CONFIG_NAME).is_file():
                return folder
        raise CommandError(str(exc)) from None


def open_history(folder: Path, *, catch_up: bool = True, writes: bool = False) -> Store:
    """The project's run store, with what it missed filed (runs that crashed, or ran while it
    could not be written). Raises ``StoreError`` — also when the store cannot be written and the
    command ``writes`` (otherwise it shows what the store has, after one warning)."""
    from ..store import open_store

    store = open_store(folder)
    if catch_up:
        from ..store import StoreError
        from ..store._sync import catch_up as file_missed

        try:
            _filed, problems = file_missed(store, folder)
        except StoreError as exc:  # a store we can read but not write: show what it has
            if writes:
                store.close()
                raise
            print(
                f"anpord: warning: the run history could not be brought up to date: {exc}",
                file=sys.stderr,
            )
            problems = []
        for problem in problems:
            print(f"anpord: warning: {problem}", file=sys.stderr)
    return store
