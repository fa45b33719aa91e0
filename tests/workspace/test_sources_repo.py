"""repo(): real git repositories made in a temp folder, cloned shallowly at a ref, cached by
commit, copied fresh per trial; bad specs and failed clones are clear errors."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from workspace_support import commit, git, make_repo

from anpord import repo
from anpord.authoring import SourceError


def fill(source: object, tmp_path: Path, name: str | None = None) -> Path:
    dest = tmp_path / name if name else Path(tempfile.mkdtemp(prefix="ws-", dir=tmp_path))
    dest.mkdir(exist_ok=True)
    source.materialize(dest, tmp_path)  # type: ignore[attr-defined]
    return dest


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    path = make_repo(tmp_path / "upstream", {"README.md": "v1\n", "src/app.py": "X = 1\n"})
    git(path, "tag", "v1")
    commit(path, {"README.md": "v2\n"}, "second")
    return path


def test_a_local_repository_is_checked_out_at_head_with_its_history_shallow(
    tmp_path: Path, upstream: Path
) -> None:
    ws = fill(repo("./upstream"), tmp_path)
    assert (ws / "README.md").read_text() == "v2\n"
    assert (ws / "src" / "app.py").read_text() == "X = 1\n"
    assert git(ws, "rev-parse", "HEAD") == git(upstream, "rev-parse", "HEAD")
    assert git(ws, "rev-parse", "--is-shallow-repository") == "true"
    assert git(ws, "status", "--porcelain") == ""


@pytest.mark.parametrize("how", ["ref=", "@"])
def test_a_ref_selects_the_commit(tmp_path: Path, upstream: Path, how: str) -> None:
    source = repo(str(upstream), ref="v1") if how == "ref=" else repo(f"{upstream}@v1")
    assert (fill(source, tmp_path) / "README.md").read_text() == "v1\n"


def test_a_commit_sha_works_as_ref(tmp_path: Path, upstream: Path) -> None:
    first = git(upstream, "rev-parse", "HEAD~1")
    assert (fill(repo("upstream", ref=first), tmp_path) / "README.md").read_text() == "v1\n"


def test_each_trial_gets_a_fresh_copy(tmp_path: Path, upstream: Path, cache_dir: Path) -> None:
    source = repo(str(upstream))
    first = fill(source, tmp_path, "t1")
    (first / "README.md").write_text("changed by the agent")
    (first / "new.txt").write_text("x")
    second = fill(source, tmp_path, "t2")
    assert (second / "README.md").read_text() == "v2\n"
    assert not (second / "new.txt").exists()
    cached = [p for p in (cache_dir / "repos").iterdir() if p.is_dir()]
    assert len(cached) == 1  # cloned once
    assert (cached[0] / "README.md").read_text() == "v2\n"


def test_the_cache_is_keyed_by_commit_so_a_moved_branch_is_fetched_again(
    tmp_path: Path, upstream: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from anpord.workspace import _git

    assert (
        fill(repo(str(upstream), ref="main"), tmp_path, "a") / "README.md"
    ).read_text() == "v2\n"
    commit(upstream, {"README.md": "v3\n"}, "third")
    monkeypatch.setattr(_git, "_memo", {})  # a new run
    assert (
        fill(repo(str(upstream), ref="main"), tmp_path, "b") / "README.md"
    ).read_text() == "v3\n"


def test_a_link_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    path = make_repo(tmp_path / "linky", {"a.txt": "a"})
    os.symlink("/etc/passwd", path / "passwd")
    commit(path, {}, "add link")
    with pytest.raises(SourceError, match="link passwd -> /etc/passwd points outside the source"):
        fill(repo(str(path)), tmp_path)


def test_a_repository_that_cannot_be_cloned_is_a_clear_error(
    tmp_path: Path, upstream: Path
) -> None:
    # Nothing listens on port 1: the clone fails at once, with git's own reason.
    with pytest.raises(
        SourceError, match=r"repo\('https://127.0.0.1:1/x.git'\): git ls-remote failed: fatal: "
    ):
        fill(repo("https://127.0.0.1:1/x.git"), tmp_path)
    with pytest.raises(
        SourceError, match=r"repo\('file:///nonexistent/repo'\): /nonexistent/repo does not exist"
    ):
        fill(repo("file:///nonexistent/repo"), tmp_path)
    with pytest.raises(SourceError, match=r"git rev-parse failed|git fetch failed"):
        fill(repo(str(upstream), ref="no-such-branch"), tmp_path)


def test_a_missing_local_path_or_a_folder_that_is_no_repository(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"repo\('./gone'\): .*/gone does not exist"):
        fill(repo("./gone"), tmp_path)
    (tmp_path / "plain").mkdir()
    with pytest.raises(SourceError, match="is not a git repository"):
        fill(repo("./plain"), tmp_path)


@pytest.mark.parametrize(
    ("spec", "url", "ref"),
    [
        ("octo/hello@v1.2", "https://github.com/octo/hello.git", "v1.2"),
        ("octo/hello", "https://github.com/octo/hello.git", None),
        ("gitlab.com/grp/proj@main", "https://gitlab.com/grp/proj.git", "main"),
        ("https://example.org/x/y.git", "https://example.org/x/y.git", None),
        ("git@example.org:x/y.git", "git@example.org:x/y.git", None),
    ],
)
def test_remote_specs_are_parsed_without_network(
    tmp_path: Path, spec: str, url: str, ref: str | None
) -> None:
    assert repo(spec).location(tmp_path) == (url, ref, False)


@pytest.mark.parametrize(
    ("spec", "ref", "message"),
    [
        ("", None, "takes a git URL"),
        ("--upload-pack=evil", None, "cannot start with '-'"),
        ("octo/hello", "-x", "is not a valid git ref"),
        ("octo/hello", "a b", "is not a valid git ref"),
    ],
)
def test_bad_specs_are_refused(spec: str, ref: str | None, message: str) -> None:
    with pytest.raises(SourceError, match=message):
        repo(spec, ref=ref)


def test_a_spec_that_is_nothing_known(tmp_path: Path) -> None:
    with pytest.raises(
        SourceError, match="not a git URL, owner/name\\[@ref\\] or an existing local repository"
    ):
        repo("just-a-word").location(tmp_path)
