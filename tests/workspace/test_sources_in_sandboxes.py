"""Sources through a real sandbox: failures are a clear SandboxError and leave nothing behind."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from workspace_support import make_repo

from anpord import directory, repo
from anpord.authoring import Variant
from anpord.sandboxes import SandboxError, SandboxSpec
from anpord.sandboxes.bwrap import BwrapSandbox
from anpord.sandboxes.local import LocalSandbox


@pytest.mark.parametrize("kind", ["local", "bwrap"])
@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            directory("missing/fixture"),
            r"directory\('missing/fixture'\): .*missing/fixture does not exist",
        ),
        (
            repo("https://127.0.0.1:1/x.git"),
            r"repo\('https://127.0.0.1:1/x.git'\): git ls-remote failed: fatal: ",
        ),
    ],
)
def test_a_bad_source_voids_with_the_cause_and_leaves_nothing(
    kind: str, source: object, message: str, tmp_path: Path
) -> None:
    roots = tmp_path / "roots"
    roots.mkdir()
    sandbox = LocalSandbox(tmp_root=roots) if kind == "local" else BwrapSandbox(tmp_root=roots)
    with pytest.raises(SandboxError, match=message):
        asyncio.run(sandbox.open(SandboxSpec(Variant(), source, tmp_path)))  # type: ignore[arg-type]
    assert list(roots.iterdir()) == []


@pytest.mark.parametrize("kind", ["local", "bwrap"])
def test_a_repo_source_fills_the_workspace_the_agent_sees(kind: str, tmp_path: Path) -> None:
    make_repo(tmp_path / "proj", {"main.py": "print('hi')\n"})
    roots = tmp_path / "roots"
    roots.mkdir()
    sandbox = LocalSandbox(tmp_root=roots) if kind == "local" else BwrapSandbox(tmp_root=roots)

    async def go() -> str:
        inst = await sandbox.open(SandboxSpec(Variant(), repo("./proj"), tmp_path))
        try:
            res = await inst.exec("python3 main.py && git log --oneline | wc -l")
            return res.stdout
        finally:
            await inst.close()

    assert asyncio.run(go()) == "hi\n1\n"
    assert list(roots.iterdir()) == []
