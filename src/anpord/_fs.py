"""Atomic file writes (a reader sees the old file or the new one, never half of either), and
reads that take only regular files."""

from __future__ import annotations

import errno
import os
import secrets
import stat

__all__ = ["HostFiles", "NotAFile", "open_regular", "read_regular", "write_atomic"]


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


class NotAFile(OSError):
    """A path that is there but is not a regular file (a link, a FIFO, a folder, a device), or is
    larger than the reader takes. ``str()`` is one line naming the path."""

    def __init__(self, path: str | os.PathLike[str], what: str):
        super().__init__(f"{os.fspath(path)}: {what}")
        self.what = what  # "is a FIFO, not a file"


def open_regular(path: str | os.PathLike[str], *, follow_links: bool = False) -> int:
    """A read-only descriptor for ``path`` if it is a regular file. A symlink is not followed (a
    run folder's files never are links: one would lead anywhere, ``/etc/shadow`` included), and
    a FIFO is opened without waiting for a writer, then refused: reading one would hang.
    ``FileNotFoundError`` when there is nothing there; ``NotAFile`` for anything else.
    ``follow_links`` reads through a link, for a path a person gave."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotAFile(path, "is a link, which is not followed") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "a device")
        raise NotAFile(path, f"is {kind}, not a file")
    return fd


def read_regular(
    path: str | os.PathLike[str], limit: int | None = None, *, follow_links: bool = False
) -> bytes:
    """The bytes of a regular file (see ``open_regular``), at most ``limit`` of them: a larger
    file is refused (``NotAFile``) rather than read whole."""
    fd = open_regular(path, follow_links=follow_links)
    try:
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if limit is not None and size > limit:
                raise NotAFile(path, f"is larger than {limit:,} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class HostFiles:
    """``SandboxFiles`` on host paths (absolute, or relative to ``base``): for code that reads
    and writes a trial's files through its sandbox, run on folders of the host."""

    def __init__(self, base: str | os.PathLike[str] = "."):
        self.base = os.fspath(base)

    def _path(self, path: str | os.PathLike[str]) -> str:
        return os.path.join(self.base, os.fspath(path))

    async def read_file(self, path: str | os.PathLike[str]) -> bytes:
        with open(self._path(path), "rb") as f:
            return f.read()

    async def write_file(self, path: str | os.PathLike[str], data: bytes) -> None:
        target = self._path(path)
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        write_atomic(target, data)
