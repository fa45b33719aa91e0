"""Helpers for the HTTP agent tests: start an agent server as a real subprocess (``anpord serve``,
the Node example) and read the URL it prints; a protocol client on plain ``http.client``."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from project_support import anpord_command, run_env

URL = re.compile(r"http://[^\s]+")


@dataclass
class Server:
    """A running agent server: its process, its URL, and what it printed so far."""

    proc: subprocess.Popen[str]
    url: str
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        """Send ``sig`` and wait for the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"the server did not stop within {timeout}s of signal {sig}") from None

    @property
    def output(self) -> str:
        return "".join(self.stdout) + "".join(self.stderr)


def _pump(stream: Any, sink: list[str]) -> None:
    for line in stream:
        sink.append(line)


def start_server(argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None,
                 timeout: float = 60) -> Server:
    """Start ``argv`` and wait for the line holding its URL."""
    proc = subprocess.Popen(
        list(argv), cwd=cwd, env=run_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, stdin=subprocess.DEVNULL,
    )
    out: list[str] = []
    err: list[str] = []
    threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True).start()
    threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True).start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in out:
            if m := URL.search(line):
                return Server(proc, m.group(0), out, err)
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    raise AssertionError(f"no URL printed by {argv}:\n{''.join(out)}{''.join(err)}")


def serve(spec: str, cwd: Path, *extra: str, env: Mapping[str, str] | None = None) -> Server:
    """``anpord serve SPEC --port 0`` in ``cwd``."""
    return start_server([*anpord_command(), "serve", spec, "--port", "0", *extra], cwd, env)


@dataclass
class Reply:
    status: int
    content_type: str
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.body.decode().splitlines() if x.strip()]


def request(url: str, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
            timeout: float = 20, headers: Mapping[str, str] | None = None) -> Reply:
    """One request with ``http.client`` (no library of the code under test); ``headers`` are
    added to (or replace) its ``Content-Type: application/json``."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return Reply(resp.status, resp.getheader("Content-Type") or "", resp.read())
    finally:
        conn.close()


def stream_lines(url: str, path: str, body: Any, timeout: float = 20) -> Iterator[dict[str, Any]]:
    """POST ``body`` and yield the NDJSON lines as they arrive."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200, (resp.status, resp.read())
        for raw in resp:
            if raw.strip():
                yield json.loads(raw)
    finally:
        conn.close()


def wait_for(predicate: Any, timeout: float = 60, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"{what} did not hold within {timeout}s")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
