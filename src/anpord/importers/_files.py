"""Reading case files and writing the suite: errors become refusals, writes are atomic."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable

from ._errors import (
    CaseFileUnreadable,
    ImportRefusal,
    SuiteFileExists,
    SuiteFileUnwritable,
    SuiteFolderMissing,
)

__all__ = ["read_text", "write_atomic"]


def _reason(error: OSError) -> str:
    return error.strerror or type(error).__name__


def read_text(path: str, not_text: Callable[[str, str], ImportRefusal]) -> str:
    """The file's text (UTF-8, a byte-order mark allowed); ``not_text`` names a file that is
    not UTF-8, since neither format can be anything else."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise CaseFileUnreadable(path, _reason(error)) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise not_text(path, f"not UTF-8 text (invalid byte at offset {error.start})") from None


def write_atomic(path: str, text: str, *, force: bool) -> None:
    """Write ``text`` to ``path`` through a temp file in the same folder and a rename, so a
    reader never sees half a suite. Without ``force`` an existing file is never replaced, even
    one that appears between the check and the rename."""
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise SuiteFolderMissing(path, folder)
    if os.path.isdir(path):
        raise SuiteFileUnwritable(path, "it is a directory")
    if not force and os.path.lexists(path):
        raise SuiteFileExists(path)
    try:
        fd, temp = tempfile.mkstemp(dir=folder, prefix=".anpord-import-", suffix=".tmp")
    except OSError as error:
        raise SuiteFileUnwritable(path, _reason(error)) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)  # mkstemp makes it private; a suite is an ordinary file
        if force:
            os.replace(temp, path)
        else:
            _link_new(temp, path)
    except OSError as error:
        raise SuiteFileUnwritable(path, _reason(error)) from None
    finally:
        if os.path.lexists(temp):
            os.unlink(temp)


def _link_new(temp: str, path: str) -> None:
    # A hard link fails if the name exists, which closes the check-then-rename race.
    try:
        os.link(temp, path)
    except FileExistsError:
        raise SuiteFileExists(path) from None
    except OSError:
        # Some filesystems have no hard links; the earlier existence check has to do.
        if os.path.lexists(path):
            raise SuiteFileExists(path) from None
        os.replace(temp, path)
