"""The model proxy answers in a process of its own, which never outlives the run: killed, stopped
with Ctrl-C, or ended normally, the run takes it along. What it records still reaches the trial
(a plain answer's record before the answer; a stream's once it has ended)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from proxy_support import Loop, Upstream

from anpord.authoring._config import Variant
from anpord.events import Event
from anpord.proxy._service import ModelProxyService
from anpord.runner._services import ServiceContext

SRC = Path(__file__).resolve().parents[2] / "src"

# A run in miniature: one proxied trial started on a loop, the proxy's pid printed, then waiting
# to be killed (or interrupted).
HOLDER = textwrap.dedent("""
    import asyncio, signal, sys
    # As from a terminal: started in the background by a non-interactive shell, the tests (and so
    # this process) would inherit Ctrl-C ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from anpord.authoring._config import Variant
    from anpord.proxy import hold_shared_server
    from anpord.proxy._server import acquire
    from anpord.proxy._service import ModelProxyService
    from anpord.runner._services import ServiceContext

    async def main():
        hold_shared_server()
        service = ModelProxyService()
        variant = Variant(harness="command:x", model_proxy=True, env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
        await service.start(ServiceContext(variant=variant, label="c v #0", sandbox=None,
                                           log=print, record=print))
        server = await acquire()
        print(server._process.pid, flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
""")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _holder() -> tuple[subprocess.Popen[str], int]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    assert proc.stdout is not None
    pid = int(proc.stdout.readline())
    assert pid != proc.pid and _alive(pid)
    return proc, pid


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_the_proxy_process_dies_with_a_killed_run() -> None:
    proc, pid = _holder()
    try:
        proc.kill()  # no tear-down at all: the kernel closes the channel
        proc.wait(10)
        assert _gone_within(pid, 10), "the proxy's process outlived its run"
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_ctrl_c_reaches_the_run_and_the_proxy_process_ends_with_it() -> None:
    proc, pid = _holder()
    try:
        os.killpg(proc.pid, signal.SIGINT)  # the terminal's Ctrl-C: the whole process group
        proc.wait(10)
        assert _gone_within(pid, 10), "the proxy's process outlived its interrupted run"
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


def test_each_call_plain_or_streamed_is_recorded_in_its_trial_once_settled() -> None:
    import json
    import urllib.request

    loop = Loop()
    upstream = Upstream(gap=0.05)
    loop.run(upstream.start())
    events: list[Event] = []
    service = ModelProxyService()
    variant = Variant(harness="command:x", model_proxy=True, env={"OPENAI_BASE_URL": upstream.url + "/v1"})
    try:
        loop.run(service.start(ServiceContext(variant=variant, label="c v #0", sandbox=None, log=lambda m: None,
                                              record=events.append)))
        assert service.handle is not None
        url = service.handle.base_url("openai") + "/chat/completions"
        body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]}
        for stream in (False, True):
            req = urllib.request.Request(url, json.dumps({**body, "stream": stream}).encode(),
                                         {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as r:
                r.read()
            loop.run(service.settle())
        calls = [e.data for e in events if e.type == "model.called"]
        assert [c["stream"] for c in calls] == [False, True], calls
        assert calls[1]["output_tokens"] == len(upstream.reply.split())
        assert all(c["status"] == "completed" and c["source"] == "proxy" for c in calls)
    finally:
        loop.run(service.stop())
        loop.run(upstream.stop())
        loop.close()


class _World:
    """A run's loop in a thread, a scripted upstream, and a proxied variant calling it; what the
    trials record lands in ``events``. ``close`` closes the loop's proxy server too."""

    def __init__(self) -> None:
        self.loop = Loop()
        self.upstream = Upstream(gap=0.0)
        self.loop.run(self.upstream.start())
        self.events: list[Event] = []
        self.variant = Variant(harness="command:x", model_proxy=True,
                               env={"OPENAI_BASE_URL": self.upstream.url + "/v1"})

    def context(self, label: str = "c v #0", variant: Variant | None = None) -> ServiceContext:
        return ServiceContext(variant=variant or self.variant, label=label, sandbox=None, log=lambda m: None,
                              record=self.events.append)

    def statuses(self) -> list[str]:
        return [e.data["status"] for e in self.events if e.type == "model.called"]

    def close(self) -> None:
        from anpord.proxy._server import close_shared

        self.loop.run(close_shared())
        self.loop.run(self.upstream.stop())
        self.loop.close()


@pytest.fixture
def world() -> Any:
    w = _World()
    yield w
    w.close()


async def _process() -> subprocess.Popen[bytes]:
    """The running loop's proxy process, only looked at (not counted as a user)."""
    from anpord.proxy._server import acquire

    server = await acquire()
    server.users -= 1
    assert server._process is not None
    return server._process


def _post_chat(base_url: str, key: str | None = None) -> tuple[int, bytes]:
    import json
    import urllib.request

    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    req = urllib.request.Request(base_url + "/chat/completions",
                                 json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
                                 headers)
    with urllib.request.urlopen(req, timeout=10) as r:
        return int(r.status), r.read()


def _call(service: ModelProxyService) -> int:
    assert service.handle is not None
    return _post_chat(service.handle.base_url("openai"))[0]


def test_a_proxy_process_that_dies_mid_run_is_replaced_for_the_trials_after(world: _World) -> None:
    """Killed (out of memory, a stray kill): the trials it was answering lose their calls, as
    with any server gone; the next trial starts a new process and is proxied again."""
    import asyncio

    from anpord.proxy import _server
    from anpord.proxy._server import hold_shared

    loop = world.loop

    async def held() -> None:
        hold_shared()

    async def pid() -> int:
        return (await _process()).pid

    async def noticed() -> None:  # the run has read the channel's end, as it does when its process dies
        server = _server._SERVERS[asyncio.get_running_loop()]
        assert server._channel is not None
        await asyncio.wait_for(asyncio.shield(server._channel.closed), 10)

    def trial() -> ModelProxyService:
        service = ModelProxyService()
        loop.run(service.start(world.context()))
        return service

    loop.run(held())
    first = trial()
    assert _call(first) == 200
    dead = loop.run(pid())
    os.kill(dead, signal.SIGKILL)
    assert _gone_within(dead, 10)
    loop.run(noticed())
    loop.run(first.stop())
    second = trial()  # not refused for the dead one: a new process answers
    assert _call(second) == 200
    loop.run(second.settle())
    assert loop.run(pid()) != dead
    loop.run(second.stop())
    assert len([e for e in world.events if e.type == "model.called"]) == 2


def test_a_process_started_before_the_loop_is_the_one_the_first_trial_uses(world: _World) -> None:
    """``start_early`` (the CLI calls it once the config is read) starts the process while the
    run still loads; the first proxied trial adopts it instead of starting its own."""
    from anpord.proxy import _server
    from anpord.proxy._server import close_shared, hold_shared, start_early

    start_early()
    early = _server._EARLY[0].process

    async def started() -> ModelProxyService:
        hold_shared()
        service = ModelProxyService()
        await service.start(world.context())
        assert await _process() is early, "the trial started a process of its own"
        return service

    service = world.loop.run(started())
    assert not _server._EARLY
    assert _call(service) == 200
    world.loop.run(service.settle())
    assert world.statuses() == ["completed"]
    world.loop.run(service.stop())
    world.loop.run(close_shared())
    assert early.poll() is not None  # the run's end ended it


def test_an_early_process_no_trial_used_ends_with_the_run() -> None:
    from anpord.proxy import _server
    from anpord.proxy._server import discard_early, start_early

    start_early()
    start_early()  # one at most
    assert len(_server._EARLY) == 1
    early = _server._EARLY[0].process
    discard_early()
    assert early.returncode is not None and not _server._EARLY


def test_trials_added_and_dropped_without_a_call_never_block_the_run(world: _World) -> None:
    """A trial's add and drop go on the channel the process reads before each request (and every
    QUIET_READ seconds, and when the run finds it full): thousands of trials that never call their
    model — more than the socket holds — still start and stop, and the next trial's call is
    answered."""
    from anpord.proxy._server import hold_shared

    key = "sk-quiet-" + "q" * 40
    variant = Variant(harness="command:x", model_proxy=True,
                      env={"OPENAI_BASE_URL": world.upstream.url + "/v1", "OPENAI_API_KEY": key})

    async def many(n: int) -> None:
        hold_shared()
        for _ in range(n):
            service = ModelProxyService()
            await service.start(world.context(variant=variant))
            await service.stop()

    world.loop.run(many(6000), timeout=120)  # ~1.5 MB of adds and drops, past the socket's buffer
    last = ModelProxyService()
    world.loop.run(last.start(world.context("c v #1", variant)))
    assert last.handle is not None
    status, _ = _post_chat(last.handle.base_url("openai"), last.handle.api_key("openai"))
    assert status == 200
    world.loop.run(last.settle())
    assert world.statuses() == ["completed"]
    assert world.upstream.seen[-1]["headers"]["authorization"] == f"Bearer {key}"
    world.loop.run(last.stop())


def test_a_trial_starting_the_moment_its_proxy_died_gets_a_new_one(world: _World) -> None:
    """The process dies and a trial starts before the run's loop has read the end of its channel
    (the loop is held busy meanwhile): the trial is proxied by a new process, not registered on
    the dead one, whose calls would all fail."""
    from anpord.proxy._server import hold_shared

    async def first() -> ModelProxyService:
        hold_shared()
        service = ModelProxyService()
        await service.start(world.context())
        return service

    async def kill_then_start() -> tuple[int, int, ModelProxyService]:
        dead = (await _process()).pid
        os.kill(dead, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _alive(dead) and time.monotonic() < deadline:
            time.sleep(0.01)  # blocking on purpose: the loop reads nothing meanwhile
        service = ModelProxyService()
        await service.start(world.context())
        return dead, (await _process()).pid, service

    before = world.loop.run(first())
    dead, pid, after = world.loop.run(kill_then_start())
    assert pid != dead
    assert _call(after) == 200
    world.loop.run(after.settle())
    assert world.statuses() == ["completed"]
    world.loop.run(after.stop())
    world.loop.run(before.stop())
