"""Atomic file writes: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import errno
import os
import secrets

__all__ = ["write_atomic"]


def write_atomic(
    path: str | os.PathLike[str],
    data: str | bytes,
    *,
    overwrite: bool = True,
    fsync: bool = False,
) -> None:
    """Write ``data`` (text is UTF-8) to ``path`` through a temp file in the same folder and a
    rename. The file gets the mode a plain ``open()`` would give it (0666 less the umask), not
    ``mkstemp``'s 0600. With ``overwrite=False`` an existing file is never replaced, even one
    that appears between a caller's check and the rename: ``FileExistsError``. ``fsync`` flushes
    the data to disk before the rename, for files a person would hate to lose. The folder must
    exist; other failures are ``OSError`` and leave no temp file behind."""
    target = os.fspath(path)
    folder, name = os.path.split(target)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        temp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            # O_EXCL with mode 0666: the kernel applies the umask, as for any new file.
            fd = os.open(temp, flags, 0o666)
            break
        except FileExistsError:
            continue
    try:
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        if overwrite:
            os.replace(temp, target)
        else:
            _link_new(temp, target)
    finally:
        try:
            os.unlink(temp)
        except FileNotFoundError:  # renamed into place
            pass


def _link_new(temp: str, target: str) -> None:
    # A hard link fails when the name exists, which closes the check-then-rename race.
    try:
        os.link(temp, target)
    except FileExistsError:
        raise
    except OSError:
        # Some filesystems have no hard links; an existence check has to do there.
        if os.path.lexists(target):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), target) from None
        os.replace(temp, target)
