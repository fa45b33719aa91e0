"""Handing a trial's folders to the unprivileged user a ``bwrap`` sandbox runs its programs as.

When anpord runs as root, sandboxed programs run as another, unprivileged user (see ``bwrap``).
The workspace, HOME and temp folder must then be theirs: they are given to that user once filled,
and again before every command, since the runner (as root) may have added files since — a Python
agent writing into the workspace, the harness's prompt files. The later passes only look into
folders that changed since the last one (by their stat), so they cost a stat per folder.

Every step goes by file descriptor without following links: the folders belong to the agent,
which may swap a folder for a link to ``/etc`` at any moment.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

__all__ = ["Ownership"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_nlink)


class Ownership:
    """Gives ``folders`` (and everything in them) to ``uid``:``gid``."""

    def __init__(self, uid: int, gid: int, folders: Sequence[Path]):
        self.uid, self.gid = uid, gid
        self.folders = [str(f) for f in folders]
        # Relative path of a folder -> (its stamp after the last pass, its subfolders' names).
        self._seen: dict[str, tuple[tuple[int, int, int, int], list[str]]] = {}

    def apply(self) -> None:
        for top in self.folders:
            try:
                fd = os.open(top, _DIR_FLAGS)
            except OSError:
                continue
            self._walk(fd, top)

    def _walk(self, top_fd: int, top: str) -> None:
        # Explicit stack of (folder fd, its key, subfolders still to visit): one fd per level.
        stack: list[tuple[int, str, list[str]]] = []
        fd, key = top_fd, top
        while True:
            pending = self._visit(fd, key)
            stack.append((fd, key, pending))
            fd = -1
            while stack and fd < 0:
                parent, parent_key, names = stack[-1]
                if not names:
                    os.close(parent)
                    stack.pop()
                    continue
                name = names.pop()
                try:
                    fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
                    key = f"{parent_key}/{name}"
                except OSError:
                    self._seen.pop(f"{parent_key}/{name}", None)
                    fd = -1
            if fd < 0:
                return

    def _visit(self, fd: int, key: str) -> list[str]:
        """Give the folder ``fd`` and, if it changed since the last pass, its entries; return
        the names of its subfolders."""
        try:
            st = os.fstat(fd)
            if st.st_uid != self.uid or st.st_gid != self.gid:
                os.fchown(fd, self.uid, self.gid)
                st = os.fstat(fd)
        except OSError:
            return []
        # Taken before reading the entries: a change made while they are read shows next time.
        stamp = _stamp(st)
        known = self._seen.get(key)
        if known is not None and known[0] == stamp:
            return list(known[1])
        subdirs = []
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    try:
                        est = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(est.st_mode):
                        subdirs.append(entry.name)  # given when visited
                    elif est.st_uid != self.uid or est.st_gid != self.gid:
                        try:
                            os.chown(
                                entry.name, self.uid, self.gid, dir_fd=fd, follow_symlinks=False
                            )
                        except OSError:
                            pass
        except OSError:
            return subdirs
        self._seen[key] = (stamp, subdirs)
        return list(subdirs)
