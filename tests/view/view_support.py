"""Helpers for the view's tests: the real ``anpord view`` as a subprocess, and headless Chromium.

``ViewServer(folder)`` starts ``anpord view --port 0`` with ``folder`` as its cwd, reads the URL
it prints, and stops it with SIGTERM (checking it exits 0). ``open_browser()`` launches Debian's
chromium through Playwright (never ``playwright install``). ``Pages`` visits URLs in one browser
page, saving a screenshot of each page it visits.
"""

from __future__ import annotations

import http.client
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from project_support import anpord_command, run_env

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


class ViewServer:
    def __init__(self, cwd: Path, *args: str):
        self.proc = subprocess.Popen(
            [*anpord_command(), "view", "--port", "0", *args],
            cwd=cwd,
            env=run_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        assert self.proc.stdout is not None
        self.first_line = self.proc.stdout.readline()
        match = re.search(r"(http://[\w.\[\]:]+)/", self.first_line)
        if match is None:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=60)
            raise AssertionError(f"anpord view printed no URL: {self.first_line!r}\n{err}")
        self.url = match.group(1)
        parts = urlsplit(self.url)
        self.host, self.port = parts.hostname or "", parts.port or 80

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, out, err

    def get(self, target: str, *, method: str = "GET", headers: dict[str, str] | None = None,
            timeout: float = 30) -> tuple[int, dict[str, str], str]:
        """A raw request: ``target`` is sent exactly as given (no client-side normalising)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            names = {k.lower() for k in headers or {}}
            conn.putrequest(method, target, skip_host="host" in names, skip_accept_encoding=True)
            for k, v in (headers or {}).items():
                conn.putheader(k, v)
            conn.endheaders()
            resp = conn.getresponse()
            body = resp.read().decode("utf-8", "replace")
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body
        finally:
            conn.close()


@contextmanager
def view_server(cwd: Path, *args: str) -> Iterator[ViewServer]:
    server = ViewServer(cwd, *args)
    try:
        yield server
    finally:
        code, _, err = server.stop()
        assert code == 0, f"anpord view exited {code}\n{err}"


def trial_path(run_id: str, case_id: str, variant: str, trial: int) -> str:
    return f"/runs/{run_id}/trials/{quote(case_id)}?variant={quote(variant, safe='')}&trial={trial}"


def cell_path(run_id: str, case_id: str, variant: str) -> str:
    return f"/runs/{run_id}/cells/{quote(case_id)}?variant={quote(variant, safe='')}"


@contextmanager
def open_browser() -> Iterator[Any]:
    """Headless Debian chromium under Playwright. Fails, never skips, when either is missing:
    the view's tests are not optional (install: ``apt-get install chromium``, ``pip install
    playwright``)."""
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: apt-get install -y chromium"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - a set-up error, reported as one
        raise AssertionError("playwright is missing: pip install playwright") from None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Pages:
    """One browser page that screenshots every page it visits into ``shots`` and records any
    dialog (``alert``) and console error it sees."""

    browser: Any
    base: str
    shots: Path
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.shots.mkdir(parents=True, exist_ok=True)
        self.page = self.browser.new_page(viewport={"width": 1280, "height": 900})
        self.page.on("dialog", self._dialog)
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self._count = 0

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def visit(self, path: str, name: str) -> Any:
        response = self.page.goto(self.base + path, wait_until="load")
        self.shot(name)
        return response

    def shot(self, name: str) -> Path:
        self._count += 1
        path = self.shots / f"{self._count:02d}-{re.sub(r'[^a-z0-9]+', '-', name.lower())}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def close(self) -> None:
        self.page.close()


def wait_for(predicate: Any, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def copy_run(run_dir: Path, new_id: str) -> Path:
    target = run_dir.parent / new_id
    shutil.copytree(run_dir, target)
    return target
