"""An HTTP agent on the protocol written from the docs alone, in plain Python: it reads the
session's ``mocks`` and, each turn, calls the ``pay`` mock's URL and answers with what it got."""

from __future__ import annotations

import json
import sys
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SESSIONS: dict[str, dict] = {}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _json(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict:
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def do_GET(self) -> None:
        if self.path == "/v1/info":
            self._json(200, {"protocol": "anpord-agent", "protocol_version": 1})
        else:
            self._json(404, {"error": "not_found", "message": self.path})

    def do_POST(self) -> None:
        body = self._body()
        if self.path == "/v1/sessions":
            sid = body.get("session_id") or "s1"
            SESSIONS[sid] = body.get("mocks") or {}
            self._json(201, {"session_id": sid})
            return
        sid = self.path.split("/")[3]
        mocks = SESSIONS[sid]
        url = mocks["pay"]["url"] + "/balance?who=" + body["input"]
        with urllib.request.urlopen(url, timeout=10) as r:
            answer = r.read().decode()
        text = json.dumps({"balance": json.loads(answer), "kinds": {k: v["kind"] for k, v in mocks.items()}})
        lines = [{"type": "message.completed", "role": "assistant", "text": text},
                 {"type": "turn.end", "status": "completed", "message": text}]
        data = "".join(json.dumps(x) + "\n" for x in lines).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_DELETE(self) -> None:
        SESSIONS.pop(self.path.split("/")[3], None)
        self.send_response(204)
        self.end_headers()


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"serving on http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
