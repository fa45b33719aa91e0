"""files() and directory(): literal files and folders copied into a workspace, escapes refused."""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

import pytest

from anpord import directory, files
from anpord.authoring import SourceError


def fill(source: object, tmp_path: Path, base: Path | None = None) -> Path:
    dest = Path(tempfile.mkdtemp(prefix="ws-", dir=tmp_path))
    source.materialize(dest, base or tmp_path)  # type: ignore[attr-defined]
    return dest


def test_files_writes_text_and_bytes(tmp_path: Path) -> None:
    ws = fill(files({"a.txt": "alpha", "deep/b.bin": b"\x00\x01"}), tmp_path)
    assert (ws / "a.txt").read_text() == "alpha"
    assert (ws / "deep" / "b.bin").read_bytes() == b"\x00\x01"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("../x", "would escape the workspace"),
        ("a/../../x", "would escape the workspace"),
        ("/etc/passwd", "is absolute"),
        ("", "non-empty string"),
        ("a\x00b", "NUL byte"),
    ],
)
def test_files_refuses_escaping_paths(name: str, message: str) -> None:
    with pytest.raises(SourceError, match=message):
        files({name: "x"})


def test_directory_copies_a_tree_relative_to_the_eval_file(tmp_path: Path) -> None:
    base = tmp_path / "evals" / "suite"
    fixture = base / "fixtures" / "app"
    (fixture / "src").mkdir(parents=True)
    (fixture / "src" / "main.py").write_text("print(1)")
    run = fixture / "run.sh"
    run.write_text("#!/bin/sh\n")
    run.chmod(0o755)
    os.symlink("src/main.py", fixture / "entry.py")
    ws = fill(directory("fixtures/app"), tmp_path, base)
    assert (ws / "src" / "main.py").read_text() == "print(1)"
    assert os.access(ws / "run.sh", os.X_OK)
    assert os.readlink(ws / "entry.py") == "src/main.py"
    assert (ws / "entry.py").read_text() == "print(1)"


def test_directory_copies_never_share_the_fixture_file(tmp_path: Path) -> None:
    fixture = tmp_path / "fx"
    fixture.mkdir()
    (fixture / "f.txt").write_text("original")
    ws = fill(directory(str(fixture)), tmp_path)
    copy = ws / "f.txt"
    assert copy.stat().st_ino != (fixture / "f.txt").stat().st_ino
    assert (fixture / "f.txt").stat().st_nlink == 1  # no hard link was made
    with open(copy, "r+") as f:  # an in-place write
        f.write("CHANGED!")
    assert (fixture / "f.txt").read_text() == "original"


def test_directory_missing_or_not_a_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"directory\('nope'\): .*/nope does not exist"):
        fill(directory("nope"), tmp_path)
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(SourceError, match="is not a folder"):
        fill(directory("file.txt"), tmp_path)


@pytest.mark.parametrize("target", ["/etc/passwd", "../../outside.txt", "../sub/../../outside.txt"])
def test_directory_refuses_links_pointing_out_of_it(tmp_path: Path, target: str) -> None:
    (tmp_path / "outside.txt").write_text("secret")
    fixture = tmp_path / "fx"
    (fixture / "sub").mkdir(parents=True)
    os.symlink(target, fixture / "sub" / "leak")
    with pytest.raises(SourceError, match=r"link sub/leak -> .* points outside the source"):
        fill(directory(str(fixture)), tmp_path)


def test_directory_rewrites_an_absolute_link_that_stays_inside(tmp_path: Path) -> None:
    fixture = tmp_path / "fx"
    (fixture / "a").mkdir(parents=True)
    (fixture / "target.txt").write_text("t")
    os.symlink(fixture / "target.txt", fixture / "a" / "abs")
    ws = fill(directory(str(fixture)), tmp_path)
    assert os.readlink(ws / "a" / "abs") == "../target.txt"
    assert (ws / "a" / "abs").read_text() == "t"


def test_directory_refuses_special_files(tmp_path: Path) -> None:
    fixture = tmp_path / "fx"
    fixture.mkdir()
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(fixture / "s.sock"))
    try:
        with pytest.raises(SourceError, match="s.sock is not a regular file, folder or link"):
            fill(directory(str(fixture)), tmp_path)
    finally:
        sock.close()


def test_directory_needs_a_path() -> None:
    with pytest.raises(SourceError, match="takes a folder path"):
        directory("")
