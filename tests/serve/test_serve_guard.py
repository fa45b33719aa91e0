"""Who may drive ``anpord serve``: requests addressed to it by its own name, never a browser page
of another site (not even a text/plain "simple" POST, which needs no CORS), and, with a token,
only its holders — and the ``http://`` harness sends the token from ``$ANPORD_HTTP_TOKEN``."""

from __future__ import annotations

import http.client
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from project_support import END, Project, eval_file
from serve_support import Server, request, serve

TOKEN = "s3cret-token-for-serve"


@pytest.fixture(scope="module")
def open_server(make_module_project: Callable[..., Project]) -> Iterator[Server]:
    served = serve("agents.kit:agent", make_module_project().folder)
    yield served
    assert served.stop() == 0, served.output


@pytest.fixture(scope="module")
def token_server(make_module_project: Callable[..., Project]) -> Iterator[Server]:
    served = serve("agents.kit:agent", make_module_project().folder, env={"ANPORD_SERVE_TOKEN": TOKEN})
    yield served
    assert served.stop() == 0, served.output


def _sessions(server: Server, headers: dict[str, str]) -> int:
    """How many sessions exist, told by creating one more with a known id (409 when it exists)."""
    return request(server.url, "POST", "/v1/sessions", {"session_id": "probe"}, headers=headers).status


def test_a_rebound_host_name_is_refused(open_server: Server) -> None:
    reply = request(open_server.url, "GET", "/v1/info", headers={"Host": f"attacker.rebind.example:{open_server.port}"})
    assert reply.status == 403
    assert reply.json()["error"] == "forbidden"
    for host in (f"localhost:{open_server.port}", f"127.0.0.1:{open_server.port}"):
        assert request(open_server.url, "GET", "/v1/info", headers={"Host": host}).status == 200


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example", "Content-Type": "text/plain"},
    {"Origin": "null", "Content-Type": "text/plain"},
    {"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"},
    {"Sec-Fetch-Site": "same-site"},
])
def test_a_page_of_another_site_cannot_create_a_session_or_run_a_turn(
    open_server: Server, headers: dict[str, str]
) -> None:
    # What a page's `fetch(url, {method: "POST", mode: "no-cors", body: "..."})` sends.
    made = request(open_server.url, "POST", "/v1/sessions", raw=b'{"session_id": "cors"}', headers=headers)
    assert made.status == 403, made.body
    assert "pages of other sites" in made.json()["message"]
    assert request(open_server.url, "POST", "/v1/sessions", {"session_id": "cors"}).status == 201
    turn = request(open_server.url, "POST", "/v1/sessions/cors/turns", raw=b'{"input": "hi"}', headers=headers)
    assert turn.status == 403
    assert request(open_server.url, "DELETE", "/v1/sessions/cors").status == 204


def test_with_a_token_only_requests_carrying_it_are_answered(token_server: Server) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        reply = request(token_server.url, "POST", "/v1/sessions", {"session_id": "t"}, headers=headers)
        assert reply.status == 401, headers
        assert reply.json()["error"] == "unauthorized"
    good = {"Authorization": f"Bearer {TOKEN}"}
    assert request(token_server.url, "GET", "/v1/info", headers=good).status == 200
    assert request(token_server.url, "POST", "/v1/sessions", {"session_id": "t"}, headers=good).status == 201
    assert request(token_server.url, "DELETE", "/v1/sessions/t", headers=good).status == 204


def test_the_http_harness_sends_the_token_from_the_environment(
    token_server: Server, make_project: Callable[..., Project]
) -> None:
    project = make_project({"evals/weather.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            reply = await t.send("weather Lima")
            t.check(reply.message, includes("Sunny")).label("served")
            {END}
    """)})
    without = project.run("--harness", token_server.url)
    assert without.code != 0
    reason = without.result("weather")["reason"]
    assert "answered HTTP 401" in reason and "set $ANPORD_HTTP_TOKEN" in reason, reason
    run = project.run("--harness", token_server.url, env={"ANPORD_HTTP_TOKEN": TOKEN})
    assert run.code == 0, run.output
    assert TOKEN not in run.output


def test_a_token_that_cannot_travel_in_a_header_is_refused_at_start(make_module_project: Callable[..., Project]) -> None:
    import subprocess

    from project_support import anpord_command, run_env

    proc = subprocess.run([*anpord_command(), "serve", "agents.kit:agent", "--port", "0", "--token", "a b"],
                          cwd=make_module_project().folder, env=run_env(), capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "anpord serve: --token must be printable ASCII without spaces"
