"""Rows from CSV and JSONL files, and the Git LFS pointer a repository leaves in their place."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from ._errors import CaseFileIsLfsPointer, ImportRefusal
from ._values import parse_int

__all__ = ["LFS_MARK", "csv_rows", "is_lfs_pointer", "jsonl_values", "refuse_lfs_pointer"]

LFS_MARK = "version https://git-lfs.github.com/spec/"


def is_lfs_pointer(text: str) -> bool:
    # A pointer is three short lines; a file that merely mentions the URL is longer.
    return text.startswith(LFS_MARK) and len(text) < 1024 and "\noid sha256:" in text


def refuse_lfs_pointer(path: str, text: str) -> None:
    if is_lfs_pointer(text):
        raise CaseFileIsLfsPointer(path)


def csv_rows(
    path: str, text: str, refuse: Callable[[str, str], ImportRefusal]
) -> tuple[list[str], list[dict[str, str]]]:
    """The header and the rows of a CSV text (quoted cells may span lines). A row shorter than
    the header has empty cells; a longer one is refused, naming its line."""
    import csv
    import io

    # newline="": a quoted cell keeps the line breaks inside it, as written.
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None or not any(cell.strip() for cell in header):
            raise refuse(path, "the first line holds no column names")
        names = [cell.strip() for cell in header]
        rows: list[dict[str, str]] = []
        for cells in reader:
            if not cells or cells == [""]:
                continue  # a blank line
            if len(cells) > len(names):
                raise refuse(
                    path,
                    f"line {reader.line_num}: {len(cells)} cells under {len(names)} column names",
                )
            if len(cells) < len(names):
                cells += [""] * (len(names) - len(cells))
            rows.append(dict(zip(names, cells)))
    except csv.Error as error:
        raise refuse(path, f"line {reader.line_num}: {error}") from None
    return names, rows


def jsonl_values(
    path: str, text: str, refuse: Callable[[str, str], ImportRefusal]
) -> Iterator[tuple[int, Any]]:
    """Each non-blank line's JSON value with its line number; a line that is not JSON is
    refused by number."""
    # One decoder for every line: json.loads with parse_int= builds a new one per call.
    decoder = json.JSONDecoder(parse_int=parse_int)
    decode = decoder.decode
    # Its scanner, called directly on a line stripped of JSON's own whitespace, is what
    # ``decode`` does less two regex matches a line; anything but a whole value on the line goes
    # back to ``decode``, whose error (and wording) is the one that counts.
    scan = decoder.scan_once  # type: ignore[attr-defined]
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            body = line.strip(" \t\n\r")
            try:
                value, end = scan(body, 0)
            except (StopIteration, json.JSONDecodeError):
                end = -1
            if end != len(body):
                value = decode(line)
            yield number, value
        except json.JSONDecodeError as error:
            raise refuse(path, f"line {number} is not JSON: {error}") from None
        except RecursionError:
            raise refuse(path, f"line {number} is nested too deeply to read") from None
