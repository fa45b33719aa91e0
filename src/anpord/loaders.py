"""Fixture loaders for eval files: ``load_json`` and ``load_yaml``.

```python
from anpord import define_eval
from anpord.loaders import load_yaml

rows = load_yaml("evals/data/cities.yaml")

@define_eval(each=rows, id=lambda row: row["city"])
async def test(t, row): ...
```

A relative path is read from the **project folder**: the parent of the evals root (the folder
holding ``evals.config.py``), the same folder ``.anpord/`` lives in. The evals root is found by
looking for ``evals.config.py`` at or above the file that calls the loader; when the call does not
come from a file (an interactive session), at ``./evals/evals.config.py``, then at or above the
current folder. An absolute path is read as it is.

The loaders are for fixtures read while eval files load, not for code the agent runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["LoaderError", "load_json", "load_yaml", "project_folder"]

from ._errors import UsageError
from ._project import CONFIG_NAME, find_root, nearest_config_folder


class LoaderError(ValueError):
    """A fixture file is missing or does not parse. The message names the file."""


def _caller_file(depth: int) -> Path | None:
    """The file of the first frame outside this module, ``depth`` frames up."""
    frame = sys._getframe(depth)
    while frame is not None:
        name = frame.f_globals.get("__file__")
        if name and Path(name).resolve() != Path(__file__).resolve():
            return Path(name)
        frame = frame.f_back  # type: ignore[assignment]
    return None


def project_folder(start: str | Path | None = None) -> Path:
    """The project folder (the evals root's parent) for ``start`` (a file or folder), or the
    current folder when ``start`` is None. Raises ``LoaderError`` when no evals root is found."""
    # The same search `anpord eval` makes, so fixtures and runs agree on the project folder.
    root = None
    if start is not None:
        p = Path(start)
        root = nearest_config_folder(p if p.is_dir() else p.parent)
    try:
        root = root or find_root([])
    except UsageError:
        raise LoaderError(
            f"cannot find the project folder: no {CONFIG_NAME} at or above "
            f"{start if start is not None else Path.cwd()}"
        ) from None
    return root.parent


def _resolve(path: str | Path, caller: Path | None) -> Path:
    p = Path(path).expanduser()
    if p.is_absolute():
        return p
    return project_folder(caller) / p


def _read(path: str | Path, caller: Path | None, loader: str) -> tuple[Path, str]:
    full = _resolve(path, caller)
    try:
        return full, full.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LoaderError(f"{loader}: {path}: no such file (looked at {full})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LoaderError(f"{loader}: {path}: cannot read {full}: {exc}") from None


def load_json(path: str | Path) -> Any:
    """Parse a JSON file, relative to the project folder."""
    full, text = _read(path, _caller_file(2), "load_json")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise LoaderError(f"load_json: {full}:{exc.lineno}:{exc.colno}: {exc.msg}") from None


def load_yaml(path: str | Path) -> Any:
    """Parse a YAML file (safe loader), relative to the project folder."""
    full, text = _read(path, _caller_file(2), "load_yaml")
    import yaml  # imported on use: keeps `import anpord` light

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise LoaderError(f"load_yaml: {full}{where}: {problem}") from None
