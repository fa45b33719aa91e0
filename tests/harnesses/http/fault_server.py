"""A scripted agent server on 127.0.0.1 that misbehaves on request, for the HTTP harness's fault
tests: a real HTTP server (``http.server`` in a thread), so the harness under test talks to it
over a real socket.

``mode`` sets what ``GET /v1/info`` answers (``ok``, ``html``, ``other_json``, ``v2``). A turn's
input picks its behaviour:

    truncate     one event, then the stream ends cleanly without its turn.end line
    cut          one event, then the connection drops mid-stream
    garble       unreadable lines and a runner-only event among good ones, then completes
    final_only   no message.completed: the answer is only in turn.end
    bad_status   a turn.end with a status the protocol does not have
    html         200 with an HTML page instead of an event stream
    refuse       500 with a JSON error
    hang         one progress event, then nothing but keep-alive newlines until the client leaves
                 (cancels are acknowledged and ignored)
    anything else    answers "ok: <input>"
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FaultServer:
    def __init__(self, mode: str = "ok"):
        self.mode = mode
        self.requests: list[tuple[str, str]] = []
        self.hanging: list[str] = []  # sessions whose hanging turn reached the server
        self.disconnected: list[str] = []  # sessions whose client left a hanging turn
        self._stop = threading.Event()
        self._sessions = 0
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner._record(self)
                owner._info(self)

            def do_POST(self) -> None:
                owner._record(self)
                owner._post(self)

            def do_DELETE(self) -> None:
                owner._record(self)
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- plumbing ---------------------------------------------------------------------------

    def _record(self, h: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.requests.append((h.command, h.path))

    @staticmethod
    def _json(h: BaseHTTPRequestHandler, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def _chunk(h: BaseHTTPRequestHandler, *lines: Any) -> None:
        data = b"".join((x if isinstance(x, bytes) else json.dumps(x).encode()) + b"\n" for x in lines)
        h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        h.wfile.flush()

    @staticmethod
    def _start_stream(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/x-ndjson")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

    def _info(self, h: BaseHTTPRequestHandler) -> None:
        if h.path != "/v1/info":
            self._json(h, 404, {"error": "not_found", "message": "nothing here"})
        elif self.mode == "html":
            page = b"<!doctype html><html><body>Welcome to my blog</body></html>"
            h.send_response(200)
            h.send_header("Content-Type", "text/html; charset=utf-8")
            h.send_header("Content-Length", str(len(page)))
            h.end_headers()
            h.wfile.write(page)
        elif self.mode == "other_json":
            self._json(h, 200, {"status": "healthy", "version": "3.2"})
        else:
            version = 2 if self.mode == "v2" else 1
            self._json(h, 200, {"protocol": "anpord-agent", "protocol_version": version, "name": "faults",
                                "capabilities": {"cancel": True}})

    def _post(self, h: BaseHTTPRequestHandler) -> None:
        size = int(h.headers.get("Content-Length") or 0)
        body = json.loads(h.rfile.read(size) or b"{}")
        parts = h.path.strip("/").split("/")
        if parts == ["v1", "sessions"]:
            with self._lock:
                self._sessions += 1
                sid = f"fake-{self._sessions}"
            self._json(h, 201, {"session_id": sid})
        elif parts[-1] == "cancel":
            self._json(h, 200, {"cancelled": True})  # and ignored
        elif parts[-1] == "turns":
            self._turn(h, parts[2], str(body.get("input")))
        else:
            self._json(h, 404, {"error": "not_found", "message": h.path})

    def _turn(self, h: BaseHTTPRequestHandler, sid: str, text: str) -> None:
        end = {"type": "turn.end", "status": "completed", "message": None, "data": None, "error": None}
        if text == "html":
            page = b"<html>oops</html>"
            h.send_response(200)
            h.send_header("Content-Type", "text/html")
            h.send_header("Content-Length", str(len(page)))
            h.end_headers()
            h.wfile.write(page)
            return
        if text == "refuse":
            self._json(h, 500, {"error": "internal_error", "message": "database on fire"})
            return
        if text == "hang":
            self._hang(h, sid)
            return
        self._start_stream(h)
        tool = {"type": "tool.called", "call_id": "c1", "name": "lookup", "input": {"q": text}}
        if text == "truncate":
            self._chunk(h, tool)
            h.wfile.write(b"0\r\n\r\n")  # a complete, well-formed response: just no turn.end
        elif text == "cut":
            self._chunk(h, tool)
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
        elif text == "garble":
            self._chunk(h, b"this is not json", b"{broken", b"[1, 2]", b'{"no_type": true}',
                        {"type": "turn.completed"}, {"type": "progress", "n": 1},
                        {"type": "message.completed", "role": "assistant", "text": "fine"},
                        {**end, "message": "fine"})
            h.wfile.write(b"0\r\n\r\n")
        elif text == "final_only":
            self._chunk(h, {**end, "message": "only in the end", "data": {"k": 1}})
            h.wfile.write(b"0\r\n\r\n")
        elif text == "bad_status":
            self._chunk(h, {**end, "status": "done"})
            h.wfile.write(b"0\r\n\r\n")
        else:
            self._chunk(h, {**end, "message": f"ok: {text}"})
            h.wfile.write(b"0\r\n\r\n")

    def _hang(self, h: BaseHTTPRequestHandler, sid: str) -> None:
        # A client that leaves early (a loaded machine can time the trial out before the first
        # chunk) still counts as leaving: every write here is inside the try.
        with self._lock:
            self.hanging.append(sid)
        try:
            self._start_stream(h)
            self._chunk(h, {"type": "progress", "n": 1})
            while not self._stop.is_set():
                time.sleep(0.05)
                self._chunk(h, b"")  # a blank line: nothing, until the client is gone
        except OSError:
            with self._lock:
                self.disconnected.append(sid)
        h.close_connection = True
