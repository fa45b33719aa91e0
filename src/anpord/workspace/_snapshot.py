"""Workspace snapshots, for ``context.files_changed()``.

A snapshot maps each file and link under the root (workspace-relative, ``/``-separated) to a
signature: kind, size, permission bits and a content digest (files up to 1 MiB; larger ones by
size and mtime). ``.git`` folders are skipped: git's own bookkeeping is not a change the agent
made. A file whose content is unchanged but was touched is not reported.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = ["Snapshot", "changed_paths", "snapshot"]

DIGEST_LIMIT = 1 << 20
SKIP_DIRS = frozenset({".git"})

Snapshot = dict[str, tuple[object, ...]]


def _digest(path: str) -> bytes | None:
    try:
        with open(path, "rb", buffering=0) as f:
            return hashlib.blake2b(f.read(), digest_size=16).digest()
    except OSError:
        return None


def walk(root: str, skip_dirs: frozenset[str] = frozenset()) -> Iterator[tuple[str, os.stat_result, str]]:
    """Every entry under ``root`` (folders too, not followed through links) as ``(relative path,
    lstat, full path)``; a folder named in ``skip_dirs`` is yielded but not entered. Entries that
    vanish or cannot be read are left out."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(root, rel_dir) if rel_dir else root))
        except OSError:
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and entry.name not in skip_dirs:
                stack.append(rel)
            yield rel, st, entry.path


def snapshot(root: Path | str) -> Snapshot:
    """Signatures of every file and link under ``root`` (empty when it does not exist)."""
    out: Snapshot = {}
    for rel, st, path in walk(os.fspath(root), SKIP_DIRS):
        if stat.S_ISDIR(st.st_mode):
            continue
        if stat.S_ISLNK(st.st_mode):
            out[rel] = ("link", os.readlink(path))
        elif stat.S_ISREG(st.st_mode):
            mode = st.st_mode & 0o777
            if st.st_size <= DIGEST_LIMIT:
                out[rel] = ("file", st.st_size, mode, _digest(path))
            else:
                out[rel] = ("file", st.st_size, mode, st.st_mtime_ns)
        else:
            out[rel] = ("other", stat.S_IFMT(st.st_mode))
    return out


def changed_paths(before: Snapshot, after: Snapshot) -> list[str]:
    """Paths added, removed or changed between two snapshots, sorted."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
