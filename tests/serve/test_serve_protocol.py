"""The protocol as ``anpord serve`` speaks it, checked with a plain ``http.client`` client:
answers, error bodies, parked sessions, cancels, a client hanging up, idle sessions."""

from __future__ import annotations

import base64
import http.client
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from project_support import Project
from serve_support import Reply, Server, request, serve, stream_lines, wait_for


@pytest.fixture(scope="module")
def server(make_module_project: Callable[..., Project]) -> Iterator[Server]:
    project = make_module_project()
    served = serve("agents.kit:agent", project.folder)
    yield served
    assert served.stop() == 0, served.output


def _session(server: Server, sid: str) -> str:
    reply = request(server.url, "POST", "/v1/sessions", {"session_id": sid, "model": "m1"})
    assert reply.status == 201, reply.body
    return f"/v1/sessions/{sid}"


def _turn(server: Server, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    return list(stream_lines(server.url, path + "/turns", body))


def test_info_says_protocol_version_name_and_capabilities(server: Server) -> None:
    reply = request(server.url, "GET", "/v1/info")
    assert reply.status == 200 and reply.content_type.startswith("application/json")
    info = reply.json()
    assert info["protocol"] == "anpord-agent" and info["protocol_version"] == 1
    assert info["name"] == "agents.kit:agent"
    assert info["capabilities"] == {"input_requests": True, "cancel": True, "structured_input": True}


def test_a_turn_streams_ndjson_events_then_its_end(server: Server) -> None:
    path = _session(server, "stream")
    lines = _turn(server, path, {"input": "weather Lima"})
    assert [x["type"] for x in lines] == ["tool.called", "tool.result", "message.completed", "turn.end"]
    assert lines[-1] == {"type": "turn.end", "status": "completed", "message": "It is Sunny in Lima.",
                         "data": None, "error": None}
    model = _turn(server, path, {"input": "model"})
    assert model[-1]["message"] == "m1"  # the model given when the session was opened


def test_a_session_id_is_made_up_when_none_is_given_and_unique_when_one_is(server: Server) -> None:
    made = request(server.url, "POST", "/v1/sessions")
    assert made.status == 201 and made.json()["session_id"].startswith("ses_")
    _session(server, "dup")
    again = request(server.url, "POST", "/v1/sessions", {"session_id": "dup"})
    assert again.status == 409
    assert again.json() == {"error": "session_exists", "message": "session 'dup' exists already"}


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message"),
    [
        ("POST", "/v1/sessions/nope/turns", {"input": "x"}, 404, "no session 'nope'"),
        ("POST", "/v1/sessions/a%0Ab/cancel", None, 404, "no session 'a\\nb'"),
        ("POST", "/v1/sessions/nope/cancel", None, 404, "no session 'nope'"),
        ("DELETE", "/v1/sessions/nope", None, 404, "no session 'nope'"),
        ("POST", "/v1/sessions", b"{not json", 400, "the body is not JSON"),
        ("POST", "/v1/sessions", b'{"a":' + b"[" * 5000 + b"]" * 5000 + b"}", 400,
         "the body is not JSON: JSON nested more than 255 levels deep"),
        ("POST", "/v1/sessions", [1], 400, "the body must be a JSON object, got list"),
        ("POST", "/v1/sessions", {"session_id": 7}, 400, "'session_id' must be a string or null, got int"),
        ("GET", "/v2/info", None, 404, "no route GET /v2/info on this anpord agent server"),
        ("PUT", "/v1/info", None, 405, "PUT is not allowed on /v1/info"),
    ],
)
def test_errors_are_json_with_a_code_and_a_message(
    server: Server, method: str, path: str, body: Any, status: int, message: str
) -> None:
    raw = body if isinstance(body, bytes) else None
    reply = request(server.url, method, path, None if raw else body, raw=raw)
    assert reply.status == status
    assert reply.content_type.startswith("application/json")
    payload = reply.json()
    assert set(payload) == {"error", "message"} and message in payload["message"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "the request needs a JSON object body"),
        ({"input": "x", "responses": [{"request_id": "r"}]}, "either 'input'"),
        ({"responses": [{"option_id": "approve"}]}, "each response needs a string 'request_id'"),
        ({"input": "x", "messages": "nope"}, "'messages' must be a list"),
    ],
)
def test_a_malformed_turn_is_refused_before_any_stream(server: Server, body: Any, message: str) -> None:
    path = _session(server, f"bad-{abs(hash(message))}")
    reply = request(server.url, "POST", path + "/turns", body if body else None)
    assert reply.status == 400
    assert message in reply.json()["message"]


def test_an_input_request_parks_the_session_until_a_turn_answers_it(server: Server) -> None:
    path = _session(server, "parked")
    asked = _turn(server, path, {"input": "approve x.txt"})
    assert asked[-1]["status"] == "waiting"
    request_id = asked[0]["request_id"]
    busy = _turn(server, path, {"input": "hello"})
    assert busy[-1]["status"] == "failed" and "waiting on input requests" in busy[-1]["error"]
    wrong = _turn(server, path, {"responses": [{"request_id": "req_999", "option_id": "approve"}]})
    assert wrong[-1] == {**wrong[-1], "status": "failed", "error": "no pending input request 'req_999'"}
    done = _turn(server, path, {"responses": [{"request_id": request_id, "option_id": "approve"}]})
    assert [x["type"] for x in done] == ["input.resolved", "message.completed", "turn.end"]
    assert done[-1]["message"] == "you chose approve"


def test_a_second_turn_while_one_runs_is_refused_and_cancel_ends_the_first(server: Server) -> None:
    path = _session(server, "busy")
    lines: list[dict[str, Any]] = []

    def read() -> None:
        for line in stream_lines(server.url, path + "/turns", {"input": "slow 30"}):
            lines.append(line)

    reader = threading.Thread(target=read)
    reader.start()
    wait_for(lambda: bool(lines), what="the slow turn's first event")
    refused = request(server.url, "POST", path + "/turns", {"input": "hello"})
    assert refused.status == 409 and refused.json()["error"] == "turn_running"
    assert request(server.url, "POST", path + "/cancel").json() == {"cancelled": True}
    reader.join(60)
    assert lines[-1]["status"] == "cancelled"
    assert request(server.url, "POST", path + "/cancel").json() == {"cancelled": False}


def test_a_client_that_hangs_up_mid_turn_cancels_the_agent(server: Server, tmp_path: Any) -> None:
    path = _session(server, "hangup")
    marker = tmp_path / "written.txt"
    host, port = server.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("POST", path + "/turns", body=json.dumps({"input": f"write_after {marker} 30"}))
    response = conn.getresponse()
    assert response.status == 200  # the turn runs...
    conn.close()  # ...and its client leaves
    # The session takes a turn again once its turn has ended: cancelled at once, or (were the
    # hang-up missed) only after the agent's 30 s, with the file written.
    replies: list[Reply] = []

    def next_turn_taken() -> bool:
        replies.append(request(server.url, "POST", path + "/turns", {"input": "hello"}))
        return replies[-1].status != 409

    wait_for(next_turn_taken, timeout=120, what="the session to take a turn again")
    assert not marker.exists(), "the agent went on after its client left"
    # The session survives its cancelled turn.
    assert replies[-1].status == 200 and replies[-1].lines()[-1]["message"] == "echo: hello"


def test_deleting_a_session_frees_it(server: Server) -> None:
    path = _session(server, "gone")
    _turn(server, path, {"input": "approve y.txt"})  # parked
    assert request(server.url, "DELETE", path).status == 204
    assert request(server.url, "POST", path + "/turns", {"input": "x"}).status == 404
    assert request(server.url, "POST", "/v1/sessions", {"session_id": "gone"}).status == 201


def test_a_file_larger_than_a_megabyte_travels_in_a_turn(server: Server) -> None:
    path = _session(server, "big")
    payload = b"x" * (2 << 20)
    message = {"role": "user", "content": [
        {"type": "text", "text": "big"},
        {"type": "file", "name": "big.txt", "media_type": "text/plain",
         "data_url": "data:text/plain;base64," + base64.b64encode(payload).decode()},
    ]}
    end = _turn(server, path, {"input": message})[-1]
    assert end["status"] == "completed"
    assert end["message"].startswith("big | big.txt | data:text/plain;base64 | xxxx")
    assert len(end["message"]) > len(payload)


def test_idle_sessions_are_closed(make_project: Callable[..., Project]) -> None:
    project = make_project()
    served = serve("agents.kit:agent", project.folder, "--idle-timeout", "0.3")
    try:
        path = _session(served, "idle")
        assert _turn(served, path, {"input": "hi"})[-1]["status"] == "completed"
        wait_for(lambda: request(served.url, "POST", path + "/cancel").status == 404, timeout=60,
                 what="the idle session to be closed")
    finally:
        assert served.stop() == 0
