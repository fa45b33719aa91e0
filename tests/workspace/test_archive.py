"""The workspace archive over real directories: a base stored once, a trial's end as what
differs from it, restored exactly (contents, modes, links, empty folders, deletions); torn
records refused by name."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from anpord.workspace import ArchiveError, read_archive, take_base, take_snapshot, trial_key


def fixture(root: Path, files: int = 50) -> None:
    (root / "src").mkdir(parents=True)
    for i in range(files):
        (root / "src" / f"m{i:02d}.py").write_text("".join(f"def f{i}_{j}(): return {i * j}\n" for j in range(30)))
    (root / "empty").mkdir()
    os.symlink("src/m00.py", root / "link")
    (root / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(root / "run.sh", 0o755)


def tree_of(root: Path) -> dict[str, tuple[object, ...]]:
    out: dict[str, tuple[object, ...]] = {}
    for dirpath, dirs, names in os.walk(root):
        for name in dirs + names:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("l", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("d",)
            else:
                out[rel] = ("f", p.stat().st_mode & 0o777, p.read_bytes())
    return out


def test_trials_share_their_base_and_restore_exactly(tmp_path: Path) -> None:
    original, archive = tmp_path / "fixture", tmp_path / "archive"
    fixture(original)
    ends = {}
    for i in range(20):
        ws = tmp_path / f"ws{i}"
        shutil.copytree(original, ws, symlinks=True)
        base = take_base(archive, ws)
        with open(ws / "src" / "m03.py", "a") as f:
            f.write(f"# edit {i}\n")
        (ws / "src" / "m07.py").unlink()
        (ws / "new").mkdir()
        (ws / "new" / "data.bin").write_bytes(os.urandom(64))
        os.chmod(ws / "src" / "m01.py", 0o600)
        take_snapshot(archive, trial_key("case", "v", i), ws, base)
        ends[i] = tree_of(ws)
        shutil.rmtree(ws)
    assert sorted(p.name for p in archive.iterdir()) == ["blobs.pack", "index.jsonl"]
    read = read_archive(archive)
    assert len(read.bases) == 1 and len(read.trials) == 20 and not read.problems
    fixture_bytes = sum(len(v[2]) for v in tree_of(original).values() if v[0] == "f")
    # The fixture once (compressed), then a few hundred bytes a trial at most.
    assert (archive / "blobs.pack").stat().st_size < fixture_bytes / 2 + 20 * 300
    for i in (0, 13):
        dest = tmp_path / f"restored{i}"
        shutil.copytree(original, dest, symlinks=True)
        (dest / "stray.txt").write_text("not the agent's")
        read.restore(trial_key("case", "v", i), dest)
        assert tree_of(dest) == ends[i]


def test_a_torn_archive_is_refused_naming_the_reason(tmp_path: Path) -> None:
    ws, archive = tmp_path / "ws", tmp_path / "archive"
    fixture(ws, files=3)
    base = take_base(archive, ws)
    (ws / "src" / "m00.py").write_text("changed\n")
    take_snapshot(archive, trial_key("case", "v", 0), ws, base)
    with pytest.raises(ArchiveError, match="no workspace snapshot"):
        read_archive(archive).tree(trial_key("case", "v", 1))
    pack = archive / "blobs.pack"
    whole = pack.read_bytes()
    pack.write_bytes(whole[:-5])
    with pytest.raises(ArchiveError, match="torn"):
        read_archive(archive).restore(trial_key("case", "v", 0), tmp_path / "out")
    pack.write_bytes(whole)
    with open(archive / "index.jsonl", "ab") as f:
        f.write(b'{"t": "case v #2", "at": 1')  # a line cut by a crash
    read = read_archive(archive)
    assert read.problems and "torn" in read.problems[0]
    assert trial_key("case", "v", 0) in read.trials


def test_a_content_two_trials_wrote_is_kept_once_and_restores_for_both(tmp_path: Path) -> None:
    original, archive = tmp_path / "fixture", tmp_path / "archive"
    fixture(original, files=3)
    for i in range(3):
        ws = tmp_path / f"ws{i}"
        shutil.copytree(original, ws, symlinks=True)
        base = take_base(archive, ws)
        (ws / "src" / "m01.py").write_text("the same fix\n")  # a deterministic agent
        take_snapshot(archive, trial_key("case", "v", i), ws, base)
    read = read_archive(archive)
    for i in range(3):
        dest = tmp_path / f"out{i}"
        shutil.copytree(original, dest, symlinks=True)
        read.restore(trial_key("case", "v", i), dest)
        assert (dest / "src" / "m01.py").read_text() == "the same fix\n"
