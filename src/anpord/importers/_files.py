"""Reading case files and writing the suite: errors become refusals, writes are atomic."""

from __future__ import annotations

import os
from collections.abc import Callable

from .. import _fs
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
        _fs.write_atomic(path, text, overwrite=force, fsync=True)
    except FileExistsError:
        raise SuiteFileExists(path) from None
    except OSError as error:
        raise SuiteFileUnwritable(path, _reason(error)) from None
