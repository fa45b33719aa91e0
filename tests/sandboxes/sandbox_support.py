"""Helpers for the sandbox tests: run a coroutine, open real sandboxes, look for leftovers."""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any

from anpord.authoring import Variant, files
from anpord.sandboxes import SandboxSpec
from anpord.sandboxes.bwrap import BwrapSandbox
from anpord.sandboxes.local import LocalSandbox

from proc_support import KINDS, live_with, run  # noqa: F401 - re-exported for the tests here



def make_sandbox(kind: str, tmp_root: Path) -> Any:
    return LocalSandbox(tmp_root=tmp_root) if kind == "local" else BwrapSandbox(tmp_root=tmp_root)


def spec(source: Any = None, base: Path | None = None, **variant: Any) -> SandboxSpec:
    return SandboxSpec(
        Variant(**variant), source if source is not None else files({}), base or Path.cwd()
    )



class Listener:
    """A TCP listener on 127.0.0.1 that records every connection and the bytes it received."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.received = b""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            conn.settimeout(1)
            try:
                while chunk := conn.recv(4096):
                    self.received += chunk
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()
