"""The container CLI's output is read to the CLI's exit, not to the pipe's end: a process the CLI
leaves running (a container's monitor, as ``podman run -d`` starts one) may hold its output open
for as long as it lives. Before, the call waited for that end until its timeout, and under uvloop
a docker-sandboxed run hung with its container up."""

from __future__ import annotations

import asyncio
import time

import pytest

from anpord.sandboxes._container import ContainerCLI


def _cli() -> ContainerCLI:
    return ContainerCLI(path="/bin/sh", podman=False)


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_cli_that_leaves_a_process_holding_its_output_returns_at_its_exit(loop: str) -> None:
    async def body() -> tuple[int, bytes, str, float]:
        started = time.monotonic()
        code, out, err = await _cli().run_bytes(
            "-c", "echo 95e6d9747cf1; echo said >&2; sleep 30 & exit 0", timeout=10
        )
        return code, out, err, time.monotonic() - started

    if loop == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        code, out, err, took = uvloop.run(body())
    else:
        code, out, err, took = asyncio.run(body())
    assert (code, out, err) == (0, b"95e6d9747cf1\n", "said\n")
    assert took < 5  # the leftover sleep holds both pipes for 30 s


def test_a_cli_output_larger_than_a_pipe_and_its_stdin_go_through_whole() -> None:
    data = bytes(range(256)) * 8192  # 2 MiB: many times a pipe's buffer, both ways

    async def body() -> tuple[int, bytes, str]:
        return await _cli().run_bytes("-c", "cat; head -c 300000 /dev/zero >&2", input=data, timeout=30)

    code, out, err = asyncio.run(body())
    assert code == 0 and out == data and len(err) == 300000


def test_a_cli_that_hangs_is_killed_at_its_timeout() -> None:
    async def body() -> None:
        await _cli().run_bytes("-c", "echo partial; exec sleep 30", timeout=0.5)

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        asyncio.run(body())
    assert time.monotonic() - started < 5
