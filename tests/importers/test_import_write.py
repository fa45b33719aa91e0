"""``--out`` is written atomically: a reader sees the old file or the whole new one, and a
failed write leaves nothing behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from anpord.importers import (
    ImportedSuite,
    SuiteFileExists,
    SuiteFileUnwritable,
    SuiteFolderMissing,
    Tally,
    write_suite,
)

SUITE = ImportedSuite(source="suite = None  # é\n", tally=Tally(1, 0, 1))


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_writes_utf8_and_an_ordinary_mode(tmp_path: Path) -> None:
    target = tmp_path / "x.eval.py"
    write_suite(str(target), SUITE)
    assert target.read_bytes() == SUITE.source.encode("utf-8")
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    assert leftovers(tmp_path) == []


def test_never_replaces_without_force(tmp_path: Path) -> None:
    target = tmp_path / "x.eval.py"
    target.write_text("mine")
    with pytest.raises(SuiteFileExists):
        write_suite(str(target), SUITE)
    assert target.read_text() == "mine"
    write_suite(str(target), SUITE, force=True)
    assert target.read_text(encoding="utf-8") == SUITE.source
    assert leftovers(tmp_path) == []


def test_a_dangling_link_counts_as_existing(tmp_path: Path) -> None:
    target = tmp_path / "x.eval.py"
    target.symlink_to(tmp_path / "nowhere")
    with pytest.raises(SuiteFileExists):
        write_suite(str(target), SUITE)


def test_a_file_that_appears_mid_write_is_not_overwritten(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "x.eval.py"
    real_open = os.open

    def racing_open(path, flags, mode=0o777):  # another writer creates the file after the check
        if str(path).endswith(".tmp"):
            target.write_text("theirs")
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", racing_open)
    with pytest.raises(SuiteFileExists):
        write_suite(str(target), SUITE)
    assert target.read_text() == "theirs"
    assert leftovers(tmp_path) == []


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "x.eval.py"
    target.write_text("old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(SuiteFileUnwritable) as caught:
        write_suite(str(target), SUITE, force=True)
    assert (
        caught.value.line()
        == f"SuiteFileUnwritable: Could not write {target}: No space left on device"
    )
    assert target.read_text() == "old"
    assert leftovers(tmp_path) == []


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(SuiteFolderMissing) as caught:
        write_suite(str(tmp_path / "no" / "x.eval.py"), SUITE)
    assert caught.value.message == (
        f"Could not write {tmp_path}/no/x.eval.py: the folder {tmp_path}/no does not exist"
    )
