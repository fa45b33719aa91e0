"""An HTTP agent on the protocol written from the docs alone, in plain Python: it keeps the
session's ``model_proxy`` and, each turn, asks its model through it — the base URL and the key
from its ``env`` — and answers with the model's reply."""

from __future__ import annotations

import json
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
            SESSIONS[sid] = body.get("model_proxy") or {}
            self._json(201, {"session_id": sid})
            return
        sid = self.path.split("/")[3]
        env = SESSIONS[sid].get("env") or {}
        req = urllib.request.Request(
            env["OPENAI_BASE_URL"] + "/chat/completions",
            json.dumps({"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": body["input"]}]}).encode(),
            {"Content-Type": "application/json", "Authorization": f"Bearer {env['OPENAI_API_KEY']}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            text = json.loads(r.read())["choices"][0]["message"]["content"]
        lines = [{"type": "message.completed", "role": "assistant", "text": text},
                 {"type": "turn.end", "status": "completed", "message": text}]
        data = "".join(json.dumps(e) + "\n" for e in lines).encode()
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
