"""Every sandbox caps the size of what a trial writes (workspace, HOME, temp files): 1 GiB unless
the variant says otherwise. A trial over the cap gets ENOSPC or is killed, the instance says why
(``limit_exceeded()``), and the run goes on: the folder is removed, the next trial is unaffected."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sandbox_support import KINDS, make_sandbox, run, spec

from anpord.authoring import files
from anpord.sandboxes import DEFAULT_SIZE, SandboxError, parse_size

CAP = "8M"
OVER = "head -c 12M /dev/zero"


def over_the_cap(
    kind: str, root: Path, script: str, cap: str = CAP
) -> tuple[object, str | None, bool]:
    """Run ``script`` in a fresh instance capped at ``cap``; (its result, what limit_exceeded()
    says, whether the instance folder was a tmpfs of its own)."""

    async def go() -> tuple[object, str | None, bool]:
        inst = await make_sandbox(kind, root).open(spec(options={"sandbox_size": cap}))
        try:
            mounted = os.path.ismount(inst.root)
            res = await inst.exec(script, timeout=120)
            return res, await inst.limit_exceeded(), mounted
        finally:
            await inst.close()

    return run(go())


@pytest.mark.parametrize("kind", KINDS)
def test_in_memory_as_root_the_cap_is_a_tmpfs_that_refuses_the_write(
    kind: str, shm_root: Path
) -> None:
    res, reason, mounted = over_the_cap(kind, shm_root, f"{OVER} > big; echo exit=$?; du -m big")
    assert mounted
    assert "No space left on device" in res.stderr
    assert res.stdout.splitlines() == ["exit=1", "8\tbig"]
    assert (
        reason
        == "workspace size limit reached: 8 MiB (Variant(options={'sandbox_size': ...}) raises it)"
    )


@pytest.mark.parametrize("kind", KINDS)
def test_on_disk_the_folder_is_watched_and_the_trial_killed(kind: str, tmp_root: Path) -> None:
    # Folders on a disk are not moved into memory: a watcher measures them instead.
    res, reason, mounted = over_the_cap(kind, tmp_root, f"{OVER} > big; sleep 600; echo survived")
    assert not mounted
    # Killed by the watcher, not by the exec's timeout long before the sleep ended.
    assert (res.exit_code, res.stdout, res.timed_out) == (-9, "", False)
    assert reason is not None and reason.startswith("workspace size limit reached: 8 MiB")


@pytest.mark.parametrize("kind", KINDS)
def test_home_counts_too(kind: str, shm_root: Path) -> None:
    _, reason, _ = over_the_cap(kind, shm_root, f'{OVER} > "$HOME/big"')
    assert reason is not None


def test_bwrap_caps_its_private_tmp_and_reports_it(tmp_root: Path) -> None:
    res, reason, _ = over_the_cap("bwrap", tmp_root, f"{OVER} > /tmp/big; echo exit=$?; sleep 1")
    assert "No space left on device" in res.stderr and res.stdout == "exit=1\n"
    assert reason is not None and reason.startswith("workspace size limit reached: 8 MiB")


@pytest.mark.parametrize("kind", KINDS)
def test_a_breach_is_remembered_after_the_files_are_deleted(kind: str, shm_root: Path) -> None:
    _, reason, _ = over_the_cap(kind, shm_root, f"{OVER} > big; sleep 0.6; rm big")
    assert reason is not None


@pytest.mark.parametrize("kind", KINDS)
def test_a_trial_under_the_cap_reports_nothing_and_the_run_goes_on(
    kind: str, shm_root: Path, tmp_root: Path
) -> None:
    over_the_cap(kind, shm_root, OVER + " > big")  # one trial over it...
    for root in (shm_root, tmp_root):  # ... and the next ones are unaffected
        res, reason, _ = over_the_cap(kind, root, "head -c 4M /dev/zero > f && echo ok")
        assert (res.stdout, reason) == ("ok\n", None)


def test_the_default_cap_is_one_gib(shm_root: Path) -> None:
    assert DEFAULT_SIZE == 1 << 30

    async def go() -> str:
        inst = await make_sandbox("bwrap", shm_root).open(spec())
        try:
            return (await inst.exec("stat -f -c '%b %S' . /tmp")).stdout
        finally:
            await inst.close()

    for line in run(go()).splitlines():  # the workspace's filesystem and /tmp: 1 GiB each
        blocks, size = map(int, line.split())
        assert blocks * size == 1 << 30


def test_the_environment_sets_the_default(shm_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANPORD_SANDBOX_SIZE", "8M")

    async def go() -> str | None:
        inst = await make_sandbox("local", shm_root).open(spec())
        try:
            await inst.exec(OVER + " > big")
            return await inst.limit_exceeded()
        finally:
            await inst.close()

    assert run(go()) is not None


def test_none_lifts_the_cap(tmp_root: Path) -> None:
    res, reason, mounted = over_the_cap(
        "local", tmp_root, OVER + " > big; sleep 1; echo kept", cap="none"
    )
    assert (res.stdout, reason, mounted) == ("kept\n", None, False)


@pytest.mark.parametrize("kind", KINDS)
def test_a_source_larger_than_the_cap_voids_the_trial_with_the_reason(
    kind: str, shm_root: Path
) -> None:
    big = files({"big.bin": b"\0" * (3 << 20)})
    with pytest.raises(
        SandboxError, match=r"^the case's source does not fit in the workspace size cap of 2 MiB"
    ):
        run(make_sandbox(kind, shm_root).open(spec(big, options={"sandbox_size": "2M"})))


@pytest.mark.parametrize("kind", KINDS)
def test_a_bad_cap_is_a_sandbox_error_naming_the_option(kind: str, tmp_root: Path) -> None:
    with pytest.raises(
        SandboxError,
        match=r"^Variant options sandbox_size: '2X' is not a size \(e\.g\. 512M, 2G, or none\)$",
    ):
        run(make_sandbox(kind, tmp_root).open(spec(options={"sandbox_size": "2X"})))


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("2G", 2 << 30),
        ("512M", 512 << 20),
        ("1.5GiB", 3 << 29),
        ("3000k", 3000 << 10),
        ("4MB", 4 << 20),
        (1 << 20, 1 << 20),
        ("none", None),
        ("Unlimited", None),
    ],
)
def test_sizes_read_as_binary_units(text: object, size: int | None) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "2X", "-1G", "G", True, 1.5, "100"])
def test_what_is_not_a_size_is_refused(text: object) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


MANY_FILES = 'python3 -c \'import os\nfor i in range(17000): open(f"f{i}", "w").close()\''


def test_empty_files_count_too_in_memory(shm_root: Path) -> None:
    # A cap of 8M allows 16384 files: a tmpfs refuses the next one.
    res, reason, mounted = over_the_cap("local", shm_root, MANY_FILES)
    assert mounted and "No space left on device" in res.stderr
    assert reason is not None


@pytest.mark.slow
def test_empty_files_count_too_on_disk(tmp_root: Path) -> None:
    res, reason, mounted = over_the_cap("local", tmp_root, MANY_FILES + "; sleep 600")
    assert not mounted and res.exit_code == -9 and not res.timed_out
    assert reason is not None


def test_caps_beyond_the_memory_there_is_are_watched_instead(shm_root: Path) -> None:
    # Each tmpfs is outside /dev/shm's own limit: together they stay within its free room.
    free = os.statvfs(shm_root).f_bavail * os.statvfs(shm_root).f_frsize
    res, reason, mounted = over_the_cap(
        "local", shm_root, "head -c 2M /dev/zero > f; echo ok", cap=str(free + (1 << 30))
    )
    assert (mounted, res.stdout, reason) == (False, "ok\n", None)
