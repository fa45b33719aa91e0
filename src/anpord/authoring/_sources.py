"""Sources fill a trial's fresh workspace: ``files({...})``, ``directory(path)``, ``repo(...)``."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Mapping, Protocol, runtime_checkable

__all__ = ["Source", "SourceError", "files", "Files", "safe_relative_path"]


class SourceError(Exception):
    """A source cannot be materialised (bad path, missing folder, failed clone)."""


@runtime_checkable
class Source(Protocol):
    """Anything that can fill an empty workspace directory.

    ``base`` is the folder of the eval file that declared the source (relative paths start there).
    Implementations must never write outside ``dest`` and must refuse paths that would escape it.
    """

    def materialize(self, dest: Path, base: Path) -> None: ...

    def describe(self) -> str: ...


def safe_relative_path(name: str) -> PurePosixPath:
    """Validate a workspace-relative path: no absolute paths, no ``..``, nothing empty."""
    if not isinstance(name, str) or not name.strip():
        raise SourceError(f"file path must be a non-empty string, got {name!r}")
    if "\x00" in name:
        raise SourceError(f"file path {name!r} holds a NUL byte")
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or (len(name) > 1 and name[1] == ":"):
        raise SourceError(f"file path {name!r} is absolute; paths are relative to the workspace")
    if any(part == ".." for part in p.parts):
        raise SourceError(f"file path {name!r} would escape the workspace ('..')")
    return p


class Files:
    """Literal files: ``{"path/in/workspace": "text" | bytes}``."""

    def __init__(self, contents: Mapping[str, str | bytes]):
        if not isinstance(contents, Mapping):
            raise SourceError(f"files() takes a mapping of path to text, got {type(contents).__name__}")
        checked: dict[PurePosixPath, str | bytes] = {}
        for name, text in contents.items():
            rel = safe_relative_path(name)
            if not isinstance(text, (str, bytes)):
                raise SourceError(f"files(): {name!r} must map to str or bytes, got {type(text).__name__}")
            checked[rel] = text
        self.contents = checked

    def materialize(self, dest: Path, base: Path) -> None:
        root = dest.resolve()
        for rel, text in self.contents.items():
            target = root.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            # A parent that is a link could point out of the workspace: check after mkdir.
            if not target.parent.resolve().is_relative_to(root):
                raise SourceError(f"file path {str(rel)!r} would escape the workspace")
            if isinstance(text, bytes):
                target.write_bytes(text)
            else:
                target.write_text(text, encoding="utf-8")

    def describe(self) -> str:
        return f"files({len(self.contents)} file{'s' if len(self.contents) != 1 else ''})"

    def __repr__(self) -> str:
        return self.describe()


def files(contents: Mapping[str, str | bytes] | None = None) -> Files:
    """A source made of literal files. ``files({})`` is an empty workspace."""
    return Files(contents or {})
