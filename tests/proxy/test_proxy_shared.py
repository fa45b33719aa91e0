"""One proxy server for every trial of a loop: each trial is an address on it, a request reaches
the trial its address names, and a trial's address or stand-in key is refused once the trial has
ended or when it comes with another trial's. The server closes with its last trial, or — when a
run holds it — when the run ends."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import pytest
from proxy_support import Loop, Upstream

from anpord.authoring._config import Variant
from anpord.events import Event
from anpord.proxy._service import NO_KEY, ModelProxyService
from anpord.runner._services import ServiceContext

KEY = "sk-shared-proxy-real-0123456789abcdef"
CHAT = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]}


def _post(url: str, key: str | None, body: dict[str, Any] = CHAT) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    req = urllib.request.Request(url, json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


class Trial:
    def __init__(self, loop: Loop, upstream: Upstream, label: str, variant: Variant | None = None):
        self.events: list[Event] = []
        self.logs: list[str] = []
        self.loop = loop
        self.service = ModelProxyService()
        variant = variant or Variant(harness="command:x", model_proxy=True,
                                     env={"OPENAI_BASE_URL": upstream.url + "/v1", "OPENAI_API_KEY": KEY})
        loop.run(self.service.start(ServiceContext(variant=variant, label=label, sandbox=None,
                                                   log=self.logs.append, record=self.events.append)))
        assert self.service.handle is not None
        self.url = self.service.handle.url
        self.key = self.service.env()["OPENAI_API_KEY"]

    def calls(self) -> list[dict[str, Any]]:
        self.loop.run(self.service.settle())
        return [e.data for e in self.events if e.type == "model.called"]

    def stop(self) -> None:
        self.loop.run(self.service.stop())


@pytest.fixture
def world() -> Any:
    loop = Loop()
    upstream = Upstream()
    loop.run(upstream.start())
    yield loop, upstream
    loop.run(upstream.stop())
    loop.close()


def test_trials_share_one_server_and_each_call_reaches_its_own_trial(world: Any) -> None:
    loop, upstream = world
    a, b = Trial(loop, upstream, "case v #0"), Trial(loop, upstream, "case v #1")
    try:
        pa, pb = urlsplit(a.url), urlsplit(b.url)
        assert pa.netloc == pb.netloc and pa.path != pb.path  # one server, two addresses
        assert pa.path.startswith("/trial/") and len(pa.path) > len("/trial/") + 16
        assert a.key != b.key and a.key.startswith("anpord-proxy-")
        assert _post(f"{a.url}/v1/chat/completions", a.key)[0] == 200
        assert _post(f"{b.url}/v1/chat/completions", b.key)[0] == 200
        assert _post(f"{b.url}/v1/chat/completions", b.key)[0] == 200
        # The upstream got the real key each time, and a path without the trial's address.
        assert [s["headers"]["authorization"] for s in upstream.seen] == [f"Bearer {KEY}"] * 3
        assert {s["path"] for s in upstream.seen} == {"/v1/chat/completions"}
        ca, cb = a.calls(), b.calls()
        assert len(ca) == 1 and len(cb) == 2
        # What a record keeps is the API path, not the trial's address (a replay matches on it).
        assert {c["path"] for c in ca + cb} == {"/v1/chat/completions"}
        assert ca[0]["request_key"] == cb[0]["request_key"]
    finally:
        a.stop()
        b.stop()


def test_another_trials_stand_in_or_an_ended_trials_address_is_refused(world: Any) -> None:
    loop, upstream = world
    a, b = Trial(loop, upstream, "case v #0"), Trial(loop, upstream, "case v #1")
    try:
        # b's stand-in at a's address: refused, never forwarded, and a's log says why.
        status, body = _post(f"{a.url}/v1/chat/completions", b.key)
        assert status == 403 and "not this trial's" in body["error"]["message"], body
        assert upstream.seen == [] and a.calls() == [] and b.calls() == []
        assert any("refused" in line and "stand-in" in line for line in a.logs), a.logs
        # A key in the query (Gemini's ?key=) is checked the same way.
        status, _ = _post(f"{a.url}/v1beta/models/gemini-2.5-flash:generateContent?key={b.key}", None,
                          {"contents": [{"parts": [{"text": "hi"}]}]})
        assert status == 403
        a_url, a_key = a.url, a.key
        a.stop()
        # a has ended: its address is refused (b keeps the server open), and so is its stand-in.
        status, body = _post(f"{a_url}/v1/chat/completions", a_key)
        assert status == 403 and "ended" in body["error"]["message"], body
        status, _ = _post(f"{b.url}/v1/chat/completions", a_key)
        assert status == 403
        assert upstream.seen == []
        assert _post(f"{b.url}/v1/chat/completions", b.key)[0] == 200
        # Outside any trial's address: 404 saying where requests go.
        host = urlsplit(b.url).netloc
        status, body = _post(f"http://{host}/v1/chat/completions", b.key)
        assert status == 404 and "/trial/<token>" in body["error"]["message"], body
    finally:
        b.stop()


def test_the_server_closes_with_its_last_trial_unless_a_run_holds_it(world: Any) -> None:
    from anpord.proxy import close_shared_server, hold_shared_server

    loop, upstream = world
    a = Trial(loop, upstream, "case v #0")
    host = urlsplit(a.url).netloc
    a.stop()
    with pytest.raises(urllib.error.URLError):
        _post(f"http://{host}/v1/models", None)  # nothing listens any more

    async def hold() -> None:
        hold_shared_server()

    loop.run(hold())
    b = Trial(loop, upstream, "case v #1")
    host = urlsplit(b.url).netloc
    b.stop()
    c = Trial(loop, upstream, "case v #2")
    assert urlsplit(c.url).netloc == host  # the same server, kept between trials
    c.stop()
    assert _post(f"http://{host}/v1/models", None)[0] == 404  # still open: the run holds it
    loop.run(close_shared_server())
    with pytest.raises(urllib.error.URLError):
        _post(f"http://{host}/v1/models", None)


def test_a_trial_without_a_key_gets_a_placeholder_that_is_not_forwarded(world: Any) -> None:
    loop, upstream = world
    variant = Variant(harness="command:x", model_proxy=True, env={"OPENAI_BASE_URL": upstream.url + "/v1"})
    import os

    saved = os.environ.pop("OPENAI_API_KEY", None)
    try:
        t = Trial.__new__(Trial)
        t.events, t.logs, t.loop, t.service = [], [], loop, ModelProxyService()
        loop.run(t.service.start(ServiceContext(variant=variant, label="case v #0", sandbox=None,
                                                log=t.logs.append, record=t.events.append)))
    finally:
        if saved is not None:
            os.environ["OPENAI_API_KEY"] = saved
    try:
        handle = t.service.handle
        assert handle is not None and "OPENAI_API_KEY" not in handle.env
        assert handle.api_key("openai") == NO_KEY
        assert handle.base_url("openai") == handle.url + "/v1" and handle.base_url("anthropic") == handle.url
        assert _post(handle.base_url("openai") + "/chat/completions", handle.api_key("openai"))[0] == 200
        # The upstream sees the request as the agent would have sent it without the proxy: no key.
        assert "authorization" not in upstream.seen[-1]["headers"]
        with pytest.raises(ValueError, match="unknown provider"):
            handle.base_url("mistral")
    finally:
        loop.run(t.service.stop())
