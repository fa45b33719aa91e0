"""Filling a workspace from a source tree: reflink where the filesystem can, else a copy.

Never hard links: an agent writing a file in place would change the fixture (and every other
trial's copy). Links inside the tree are copied as links, and refused when they point out of it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import sys
from pathlib import Path

from ._errors import SourceError

__all__ = ["copy_tree", "remove_tree"]

FICLONE = 0x40049409  # ioctl: share the source's blocks copy-on-write (btrfs, xfs, bcachefs)
# (source device, destination device) pairs where a fast path failed: not retried per file.
_NO_REFLINK: set[tuple[int, int]] = set()
_NO_COPY_RANGE: set[tuple[int, int]] = set()


def _copy_data(fin: int, fout: int, devices: tuple[int, int]) -> None:
    if devices not in _NO_REFLINK:
        try:
            fcntl.ioctl(fout, FICLONE, fin)
            return
        except OSError:
            _NO_REFLINK.add(devices)
    if devices not in _NO_COPY_RANGE:
        try:
            while os.copy_file_range(fin, fout, 1 << 30):
                pass
            return
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                raise
            _NO_COPY_RANGE.add(devices)
            os.lseek(fin, 0, os.SEEK_SET)
            os.ftruncate(fout, 0)
            os.lseek(fout, 0, os.SEEK_SET)
    while chunk := os.read(fin, 1 << 20):
        view = memoryview(chunk)
        while view:
            view = view[os.write(fout, view) :]


def _copy_file(src: str, dst: str, mode: int, devices: tuple[int, int]) -> None:
    fin = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        fout = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode & 0o777)
        try:
            _copy_data(fin, fout, devices)
        finally:
            os.close(fout)
    finally:
        os.close(fin)


def copy_tree(src: Path, dest: Path, what: str) -> None:
    """Copy the contents of ``src`` into the existing folder ``dest``.

    ``what`` names the source in errors. Links are kept as links when they resolve inside
    ``src`` (an absolute one is rewritten relative) and refused otherwise; sockets, fifos and
    devices are refused.
    """
    root = os.path.realpath(src)
    dest_dev = os.stat(dest).st_dev
    stack = [(root, str(dest))]
    while stack:
        src_dir, dst_dir = stack.pop()
        try:
            entries = list(os.scandir(src_dir))
        except OSError as exc:
            raise SourceError(f"{what}: cannot read {src_dir}: {exc.strerror}") from exc
        for entry in entries:
            target = os.path.join(dst_dir, entry.name)
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                link = os.readlink(entry.path)
                resolved = os.path.realpath(os.path.join(src_dir, link))
                rel = os.path.relpath(entry.path, root)
                if resolved != root and not resolved.startswith(root + os.sep):
                    raise SourceError(f"{what}: link {rel} -> {link} points outside the source")
                if os.path.isabs(link):
                    link = os.path.relpath(resolved, os.path.realpath(src_dir))
                os.symlink(link, target)
            elif stat.S_ISDIR(st.st_mode):
                os.mkdir(target, (st.st_mode & 0o777) | 0o700)
                stack.append((entry.path, target))
            elif stat.S_ISREG(st.st_mode):
                _copy_file(entry.path, target, st.st_mode | 0o600, (st.st_dev, dest_dev))
            else:
                rel = os.path.relpath(entry.path, root)
                raise SourceError(f"{what}: {rel} is not a regular file, folder or link")


def remove_tree(path: Path) -> None:
    """Remove a folder an agent may have made hard to remove (read-only subfolders)."""
    import shutil

    def fix(func: object, failed: str, exc_info: object) -> None:
        parent = os.path.dirname(failed)
        try:
            os.chmod(parent, 0o700)
            if os.path.isdir(failed) and not os.path.islink(failed):
                os.chmod(failed, 0o700)
                shutil.rmtree(failed, ignore_errors=True)
            else:
                os.unlink(failed)
        except OSError:
            pass

    if not os.path.lexists(path):
        return
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=fix)
    else:
        shutil.rmtree(path, onerror=fix)
