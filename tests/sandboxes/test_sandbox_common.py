"""What both sandboxes promise: a fresh workspace and HOME, a scrubbed environment, exec with a
timeout and capped output, and nothing left behind on close."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from sandbox_support import KINDS, live_with, make_sandbox, run, spec

from anpord.authoring import files
from anpord.sandboxes import SandboxError

pytestmark = pytest.mark.parametrize("kind", KINDS)


def test_workspace_is_filled_and_commands_run_in_it(kind: str, tmp_root: Path) -> None:
    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(
            spec(files({"a.txt": "alpha", "d/b.txt": "beta"}))
        )
        try:
            res = await inst.exec("pwd; cat a.txt d/b.txt; echo oops >&2; exit 3")
            assert res.exit_code == 3 and not res.timed_out
            assert res.stdout.splitlines() == [str(inst.workspace), "alphabeta"]
            assert res.stderr == "oops\n"
            assert (inst.workspace / "a.txt").read_text() == "alpha"
        finally:
            await inst.close()
        assert not inst.root.exists()

    run(go())


def test_environment_is_scrubbed_to_the_allowlist_plus_the_variant(
    kind: str, tmp_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANPORD_TEST_LEAK", "must-not-leak")
    monkeypatch.setenv("ANPORD_TEST_SECRET", "s3cret")

    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(
            spec(env={"GREETING": "hi"}, secrets=["ANPORD_TEST_SECRET"])
        )
        try:
            res = await inst.exec("env")
            env = dict(line.split("=", 1) for line in res.stdout.splitlines() if "=" in line)
            assert "ANPORD_TEST_LEAK" not in env
            assert env["GREETING"] == "hi" and env["ANPORD_TEST_SECRET"] == "s3cret"
            assert env["HOME"] == str(inst.home) != os.environ.get("HOME")
            assert "PATH" in env
        finally:
            await inst.close()

    run(go())


def test_home_is_private_writable_and_empty(kind: str, tmp_root: Path) -> None:
    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(spec())
        try:
            res = await inst.exec(
                'ls -A "$HOME"; echo x > "$HOME/.rc" && cat "$HOME/.rc"; echo t > "$TMPDIR/t" && cat "$TMPDIR/t"'
            )
            assert res.stdout == "x\nt\n", res.stderr
        finally:
            await inst.close()

    run(go())


def test_an_undeclared_secret_is_a_sandbox_error(
    kind: str, tmp_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANPORD_TEST_MISSING", raising=False)
    with pytest.raises(
        SandboxError, match="secret ANPORD_TEST_MISSING is declared by the variant but not set"
    ):
        run(make_sandbox(kind, tmp_root).open(spec(secrets=["ANPORD_TEST_MISSING"])))


def test_exec_runs_under_pipefail(kind: str, tmp_root: Path) -> None:
    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(spec())
        try:
            assert (await inst.exec("false | true")).exit_code == 1
        finally:
            await inst.close()

    run(go())


def test_exec_timeout_kills_the_command(kind: str, tmp_root: Path) -> None:
    token = f"{os.getpid()}{time.monotonic_ns() % 10**6}.25"

    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(spec())
        try:
            # The sleep is of years: an exec that returned at all was ended by its timeout (long
            # enough for a loaded machine to start the shell and print).
            res = await inst.exec(f"echo started; sleep {token}", timeout=2)
            assert res.timed_out and res.exit_code == -9 and not res.ok
            assert res.stdout == "started\n"
            assert live_with(token) == []
        finally:
            await inst.close()

    run(go())


def test_megabytes_of_output_are_capped(kind: str, tmp_root: Path) -> None:
    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(spec())
        try:
            res = await inst.exec(
                "head -c 30000000 /dev/zero | tr '\\0' 'x'; echo; echo END", timeout=60
            )
            assert res.exit_code == 0
            assert len(res.stdout) < 1_100_000
            assert "bytes dropped" in res.stdout and res.stdout.endswith("END\n")
        finally:
            await inst.close()

    run(go())


def test_close_is_idempotent_and_refuses_new_work(kind: str, tmp_root: Path) -> None:
    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(spec())
        await inst.close()
        await inst.close()
        with pytest.raises(SandboxError, match="closed"):
            await inst.exec("true")

    run(go())


def test_an_agent_writing_read_only_folders_is_still_cleaned_up(kind: str, tmp_root: Path) -> None:
    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(spec())
        res = await inst.exec(
            "mkdir -p locked/deep && touch locked/deep/f && chmod 000 locked/deep && chmod 500 locked"
        )
        assert res.exit_code == 0, res.stderr
        await inst.close()

    run(go())
