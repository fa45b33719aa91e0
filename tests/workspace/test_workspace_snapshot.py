"""Workspace snapshots: what files_changed() reports."""

from __future__ import annotations

import os
from pathlib import Path

from anpord.workspace import changed_paths, snapshot


def test_added_modified_deleted_and_links_are_reported_sorted(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("same")
    (tmp_path / "edit.txt").write_text("before")
    (tmp_path / "gone.txt").write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "mode.sh").write_text("echo")
    before = snapshot(tmp_path)

    (tmp_path / "edit.txt").write_text("after!")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "sub" / "new.txt").write_text("n")
    (tmp_path / "sub" / "mode.sh").chmod(0o755)
    os.symlink("keep.txt", tmp_path / "link")
    assert changed_paths(before, snapshot(tmp_path)) == [
        "edit.txt",
        "gone.txt",
        "link",
        "sub/mode.sh",
        "sub/new.txt",
    ]


def test_same_size_rewrite_is_a_change_but_a_touch_is_not(tmp_path: Path) -> None:
    f = tmp_path / "f.txt"
    f.write_text("aaaa")
    before = snapshot(tmp_path)
    os.utime(f, (1, 1))
    assert changed_paths(before, snapshot(tmp_path)) == []
    f.write_text("bbbb")
    os.utime(f, (1, 1))  # even with the old mtime back
    assert changed_paths(before, snapshot(tmp_path)) == ["f.txt"]


def test_git_internals_are_not_changes(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    before = snapshot(tmp_path)
    (tmp_path / ".git" / "index").write_text("x")
    (tmp_path / ".gitignore").write_text("x")
    assert changed_paths(before, snapshot(tmp_path)) == [".gitignore"]


def test_a_missing_root_is_empty(tmp_path: Path) -> None:
    assert snapshot(tmp_path / "nope") == {}
