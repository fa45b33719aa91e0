"""Sources fill a trial's fresh workspace: ``files({...})``, ``directory(path)``, ``repo(...)``."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Protocol, runtime_checkable

from ._errors import SourceError

__all__ = [
    "Directory",
    "Files",
    "Repo",
    "Source",
    "SourceError",
    "directory",
    "files",
    "repo",
    "safe_relative_path",
]


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
            raise SourceError(
                f"files() takes a mapping of path to text, got {type(contents).__name__}"
            )
        checked: dict[PurePosixPath, str | bytes] = {}
        for name, text in contents.items():
            rel = safe_relative_path(name)
            if not isinstance(text, (str, bytes)):
                raise SourceError(
                    f"files(): {name!r} must map to str or bytes, got {type(text).__name__}"
                )
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


class Directory:
    """A folder copied into each trial's workspace (reflink or copy, never hard links).

    A relative path starts at the eval file's folder. Links inside the folder are kept when they
    stay inside it and refused when they point out of it.
    """

    def __init__(self, path: str | os.PathLike[str]):
        if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
            raise SourceError(f"directory() takes a folder path, got {path!r}")
        self.path = str(path)

    def location(self, base: Path) -> Path:
        p = Path(self.path).expanduser()
        return p if p.is_absolute() else base / p

    def materialize(self, dest: Path, base: Path) -> None:
        from ._fill import copy_tree

        src = self.location(base)
        if not src.exists():
            raise SourceError(f"{self.describe()}: {src} does not exist")
        if not src.is_dir():
            raise SourceError(f"{self.describe()}: {src} is not a folder")
        copy_tree(src, dest, self.describe())

    def describe(self) -> str:
        return f"directory({self.path!r})"

    def __repr__(self) -> str:
        return self.describe()


def directory(path: str | os.PathLike[str]) -> Directory:
    """A source copied from a folder, relative to the eval file's folder."""
    return Directory(path)


_HOSTED = re.compile(
    r"(?:(?P<host>[\w.-]+\.[a-z]{2,})/)?(?P<owner>[\w.-]+)/(?P<name>[\w.-]+?)(?:\.git)?"
)
_REF_OK = re.compile(r"[^\s~^:?*\[\\]+")


class Repo:
    """A git repository checked out (shallowly, at ``ref``) into each trial's workspace.

    ``spec`` is a git URL (``https://…``, ``ssh://…``, ``git@host:owner/name``), a hosted
    ``owner/name[@ref]`` (GitHub unless a host leads: ``gitlab.com/owner/name@ref``), or a local
    repository path (relative to the eval file's folder; ``path@ref`` works too).
    """

    def __init__(self, spec: str, ref: str | None = None):
        if not isinstance(spec, str) or not spec.strip():
            raise SourceError(
                f"repo() takes a git URL, owner/name[@ref] or a repository path, got {spec!r}"
            )
        spec = spec.strip()
        if spec.startswith("-"):
            raise SourceError(f"repo({spec!r}): a repository cannot start with '-'")
        self.spec = spec
        self.ref = ref
        if ref is not None:
            self._check_ref(ref)

    def _check_ref(self, ref: str) -> None:
        if not isinstance(ref, str) or not _REF_OK.fullmatch(ref) or ref.startswith("-"):
            raise SourceError(f"repo({self.spec!r}): {ref!r} is not a valid git ref")

    def _split_ref(self, text: str) -> tuple[str, str | None]:
        if self.ref is not None or "@" not in text:
            return text, self.ref
        head, _, ref = text.rpartition("@")
        self._check_ref(ref)
        return head, ref

    def location(self, base: Path) -> tuple[str, str | None, bool]:
        """(url, ref, is_local) for this spec, local paths resolved against ``base``."""
        spec = self.spec
        if "://" in spec:
            return spec, self.ref, spec.startswith("file://")
        if re.match(r"^[\w.-]+@[\w.-]+:", spec):  # scp-like ssh
            return spec, self.ref, False
        local = spec.startswith(("/", "./", "../", "~")) or spec == "."
        candidates = [(spec, self.ref)]
        if self.ref is None and "@" in spec:
            candidates.append(self._split_ref(spec))
        for candidate, ref in candidates:
            path = Path(candidate).expanduser()
            path = path if path.is_absolute() else base / path
            if path.is_dir():
                if not (path / ".git").exists() and not (path / "HEAD").is_file():
                    raise SourceError(f"{self.describe()}: {path} is not a git repository")
                return "file://" + str(path.resolve()), ref, True
        if local:
            path = Path(candidates[-1][0]).expanduser()
            raise SourceError(
                f"{self.describe()}: {path if path.is_absolute() else base / path} does not exist"
            )
        text, ref = self._split_ref(spec)
        m = _HOSTED.fullmatch(text)
        if not m:
            raise SourceError(
                f"{self.describe()}: not a git URL, owner/name[@ref] or an existing local repository"
            )
        host = m["host"] or "github.com"
        return f"https://{host}/{m['owner']}/{m['name']}.git", ref, False

    def materialize(self, dest: Path, base: Path) -> None:
        from ._fill import copy_tree
        from ._git import checkout

        url, ref, local = self.location(base)
        tree = checkout(url, ref, local=local, what=self.describe())
        copy_tree(tree, dest, self.describe())

    def describe(self) -> str:
        return f"repo({self.spec!r}{f', ref={self.ref!r}' if self.ref else ''})"

    def __repr__(self) -> str:
        return self.describe()


def repo(spec: str, ref: str | None = None) -> Repo:
    """A source checked out from a git repository (cloned once per commit, copied per trial)."""
    return Repo(spec, ref)
