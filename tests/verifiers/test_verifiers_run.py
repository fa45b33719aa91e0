"""command(...) verifiers run for real in local and bwrap sandboxes."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from anpord import command, files
from anpord.authoring import Variant
from anpord.sandboxes import SandboxSpec
from anpord.sandboxes.bwrap import BwrapSandbox
from anpord.sandboxes.local import LocalSandbox
from anpord.verifiers import Verifier, VerifierOutcome

WORKSPACE = {
    "app.py": "def add(a, b):\n    return a + b\n",
    "test_app.py": "from app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "test_broken.py.off": "def test_bad():\n    assert False\n",
    "notes.txt": "hello\n",
}


def verify(kind: str, *checks: Any, tmp_path: Path, **variant: Any) -> list[VerifierOutcome]:
    roots = tmp_path / "roots"
    roots.mkdir(exist_ok=True)
    sandbox = LocalSandbox(tmp_root=roots) if kind == "local" else BwrapSandbox(tmp_root=roots)

    async def go() -> list[VerifierOutcome]:
        inst = await sandbox.open(SandboxSpec(Variant(**variant), files(WORKSPACE), tmp_path))
        try:
            return [await c.verify(inst) for c in checks]
        finally:
            await inst.close()

    out = asyncio.run(go())
    assert list(roots.iterdir()) == []
    return out


@pytest.mark.parametrize("kind", ["local", "bwrap"])
def test_shell_checks_in_both_sandboxes(kind: str, tmp_path: Path) -> None:
    outcomes = verify(
        kind,
        command("test -f notes.txt"),
        command("grep -q hello notes.txt && grep -q bye notes.txt && echo both"),
        command("cat notes.txt | grep -q nothing-like-this | cat"),
        command("no-such-tool --check"),
        command("exit 3"),
        tmp_path=tmp_path,
    )
    assert [(o.status, o.step) for o in outcomes] == [
        ("passed", None),
        ("failed", "grep -q bye notes.txt"),  # a silent failure is still a failure
        ("failed", "grep -q nothing-like-this"),  # pipefail: the failing stage, not the last one
        ("void", "no-such-tool --check"),
        ("failed", "exit 3"),
    ]
    assert outcomes[1].message == "exit 1 at `grep -q bye notes.txt`"
    assert outcomes[3].message.startswith(
        "could not run (exit 127): bash: line 1: no-such-tool: command not found"
    )
    assert outcomes[0].result is not None and outcomes[0].result.stderr == ""


@pytest.mark.parametrize("kind", ["local", "bwrap"])
def test_a_missing_output_file_fails_silently_and_a_present_one_passes(
    kind: str, tmp_path: Path
) -> None:
    outcomes = verify(
        kind, command("test -f out.txt"), command("test -f app.py"), tmp_path=tmp_path
    )
    assert [(o.status, o.message) for o in outcomes] == [("failed", "exit 1"), ("passed", "passed")]


def test_a_test_failing_on_a_missing_module_is_failed_not_void(tmp_path: Path) -> None:
    [o] = verify(
        "local",
        command(
            "printf 'def test_x():\\n    import solution_the_agent_forgot\\n' > test_x.py"
            " && python -m pytest -q -p no:cacheprovider test_x.py"
        ),
        tmp_path=tmp_path,
    )
    assert o.result is not None and "No module named" in o.result.output
    assert (o.status, o.message.split(": ", 1)[-1].split(" in ")[0]) == ("failed", "1 failed")


def test_a_failing_step_is_named_without_splitting_the_command(tmp_path: Path) -> None:
    [o] = verify(
        "local", command("echo building && ls missing-dir && echo never"), tmp_path=tmp_path
    )
    assert (o.status, o.step) == ("failed", "ls missing-dir")
    assert (
        o.message
        == "exit 2 at `ls missing-dir`: ls: cannot access 'missing-dir': No such file or directory"
    )
    assert o.result is not None and o.result.stdout == "building\n"
    assert "anpord" not in o.result.stderr  # the step marker is not shown to the user


@pytest.mark.slow
def test_real_pytest_passes_fails_and_runs_nothing(tmp_path: Path) -> None:
    outcomes = verify(
        "local",
        command("python -m pytest -q -p no:cacheprovider test_app.py"),
        command(
            "mv test_broken.py.off test_broken.py && python -m pytest -q -p no:cacheprovider test_broken.py"
        ),
        command("python -m pytest -q -p no:cacheprovider -k nothing-matches test_app.py"),
        command("mkdir empty && cd empty && python -m pytest -q -p no:cacheprovider"),
        command(
            "python -m unittest discover -s empty-dir -t . 2>&1 || mkdir empty-dir && python -m unittest discover -s empty-dir"
        ),
        command("python -m no_such_module_anywhere"),
        tmp_path=tmp_path,
    )
    statuses = [o.status for o in outcomes]
    assert statuses == ["passed", "failed", "void", "void", "void", "void"], [
        o.message for o in outcomes
    ]
    assert "1 passed" in outcomes[0].message
    assert "1 failed" in outcomes[1].message
    assert "No module named no_such_module_anywhere" in outcomes[5].message


def test_a_hanging_check_times_out_as_failed_and_is_killed(tmp_path: Path) -> None:
    token = f"{7000 + os.getpid() % 1000}.5"
    [o] = verify("local", command(f"sleep {token}", timeout=0.5), tmp_path=tmp_path)  # of hours
    assert (o.status, o.message) == ("failed", "timed out after 0.5s")
    with os.popen("ps -eo args") as ps:
        assert f"sleep {token}" not in ps.read()


def test_megabytes_of_check_output_keep_the_summary(tmp_path: Path) -> None:
    [o] = verify(
        "local",
        command("head -c 5000000 /dev/zero | tr '\\0' 'y'; echo; echo '3 passed in 1s'"),
        tmp_path=tmp_path,
    )
    assert o.status == "passed" and o.message == "passed: 3 passed in 1s"


def test_construction_errors_are_clear() -> None:
    with pytest.raises(ValueError, match="command\\(\\) needs a shell command"):
        command("  ")
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        command("true", timeout=0)


def test_a_verifier_is_named_and_fits_the_protocol() -> None:
    v = command("pytest -q", name="unit tests")
    assert v.name == "unit tests" and isinstance(v, Verifier)
    assert command("pytest -q").name == "pytest -q"
    assert repr(v) == "command('pytest -q')"


def test_no_sandbox_is_void() -> None:
    o = asyncio.run(command("true").verify(None))
    assert (o.status, o.message) == ("void", "no sandbox to run in")


def test_a_check_bwrap_could_not_start_is_void_not_failed(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    roots = tmp_path / "roots"
    roots.mkdir()

    async def go() -> VerifierOutcome:
        inst = await BwrapSandbox(tmp_root=roots).open(
            SandboxSpec(Variant(mounts=[str(shared)]), files(WORKSPACE), tmp_path)
        )
        try:
            shared.rmdir()  # gone between the trial's start and its check
            return await command("test -f in.txt").verify(inst)
        finally:
            await inst.close()

    outcome = asyncio.run(go())
    assert outcome.status == "void", outcome
    assert "could not start the program: bwrap: Can't find source path" in outcome.message
    assert list(roots.iterdir()) == []
