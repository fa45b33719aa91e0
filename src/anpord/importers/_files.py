"""Reading case files and writing the suite: errors become refusals, writes are atomic."""

from __future__ import annotations

import codecs
import errno
import os
from collections.abc import Callable

from .._fs import NotAFile, read_regular, write_atomic as fs_write_atomic
from ._errors import (
    CaseFileUnreadable,
    ImportRefusal,
    SuiteFileExists,
    SuiteFileUnwritable,
    SuiteFolderMissing,
)

__all__ = ["CASE_FILE_LIMIT", "read_text", "write_atomic"]


def _reason(error: OSError) -> str:
    return error.strerror or type(error).__name__


# Byte-order marks and the encodings they announce, longest first: the UTF-32 LE mark begins
# with the UTF-16 LE one. (Windows tools write UTF-16 with a mark, PowerShell's default.)
_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


# A case file larger than this is refused rather than read: no team writes 64 MB of cases, and
# /dev/zero would otherwise be read until memory ran out.
CASE_FILE_LIMIT = 64 << 20


def read_text(path: str, not_text: Callable[[str, str], ImportRefusal]) -> str:
    """The file's text: UTF-8, or UTF-8, UTF-16 or UTF-32 announced by a byte-order mark
    (dropped); ``not_text`` names a file that is neither, since no format can be anything else.
    Only a regular file (a link to one is followed) up to ``CASE_FILE_LIMIT`` bytes is read: a
    FIFO, a device or a folder is ``CaseFileUnreadable`` at once, never waited on."""
    try:
        data = read_regular(path, CASE_FILE_LIMIT, follow_links=True)
    except NotAFile as error:
        # A folder keeps the system's own words, as other unreadable paths do.
        reason = os.strerror(errno.EISDIR) if "folder" in error.what else f"it {error.what}"
        raise CaseFileUnreadable(path, reason) from None
    except OSError as error:
        raise CaseFileUnreadable(path, _reason(error)) from None
    encoding = next((name for mark, name in _MARKS if data.startswith(mark)), "utf-8")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        shown = "UTF-8" if encoding.startswith("utf-8") else encoding.upper()
        raise not_text(path, f"not {shown} text (invalid byte at offset {error.start})") from None


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
        fs_write_atomic(path, text, overwrite=force, fsync=True)
    except FileExistsError:
        raise SuiteFileExists(path) from None
    except OSError as error:
        raise SuiteFileUnwritable(path, _reason(error)) from None
