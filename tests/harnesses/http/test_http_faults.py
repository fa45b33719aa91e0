"""Faults of an HTTP agent, each turned into a clear verdict by the real ``anpord eval``: a URL
that does not speak the protocol, a server that is down or dies mid-turn, broken and garbled
streams, a server that hangs, bad specs and options."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest
from fault_server import FaultServer
from project_support import END, Project, Run, assert_passed, eval_file
from serve_support import Server, pid_alive, serve, wait_for

TWO_CASES = {
    "evals/one.eval.py": eval_file("""
        @define_eval
        async def test(t):
            await t.send("hello")
            t.succeeded()
    """),
    "evals/two.eval.py": eval_file("""
        @define_eval
        async def test(t):
            await t.send("weather Oslo")
            t.succeeded()
    """),
}


def _void_run(project: Project, url: str) -> Run:
    run = project.run("--harness", url, "--trials", "2")
    assert run.code == 1, run.output
    assert run.stdout.strip().splitlines()[-1] == "0 passed, 0 failed, 4 void"
    lines = run.results()
    assert len(lines) == 4 and {line["verdict"] for line in lines} == {"void"}
    reasons = {line["reason"] for line in lines}
    assert len(reasons) == 1, reasons
    for line in lines:
        assert line["assertions"] == []  # the checks of a void trial are not run
    return run


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("html", "does not speak the anpord HTTP agent protocol: GET /v1/info answered an HTML page"),
        ("other_json", 'does not speak the anpord HTTP agent protocol: GET /v1/info answered JSON without "protocol": "anpord-agent"'),
        ("v2", "speaks protocol version 2; this anpord speaks version 1"),
    ],
)
def test_a_url_that_does_not_speak_the_protocol_voids_every_trial(
    make_project: Callable[..., Project], mode: str, reason: str
) -> None:
    project = make_project(TWO_CASES)
    with FaultServer(mode) as server:
        run = _void_run(project, server.url)
        # Checked once per run, not once per trial; no session was ever opened.
        assert server.requests == [("GET", "/v1/info")]
    assert reason in run.results()[0]["reason"]
    assert server.url in run.results()[0]["reason"]


def test_a_wrong_path_on_a_real_agent_server_says_to_give_the_base_url(
    make_project: Callable[..., Project],
) -> None:
    project = make_project(TWO_CASES)
    server = serve("agents.kit:agent", project.folder)
    try:
        run = _void_run(project, server.url + "/v1")
    finally:
        assert server.stop() == 0
    reason = run.results()[0]["reason"]
    assert "GET /v1/v1/info answered HTTP 404" in reason
    assert reason.endswith("give the server's base URL, without /v1")


def test_a_server_that_is_down_voids_every_trial(make_project: Callable[..., Project]) -> None:
    project = make_project(TWO_CASES)
    port = _free_port()
    run = _void_run(project, f"http://127.0.0.1:{port}")
    assert run.results()[0]["reason"] == (
        f"cannot reach the agent server at http://127.0.0.1:{port}: Connection refused (is it running?)"
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("http://", "http harness spec 'http://': it names no host"),
        ("http://127.0.0.1:99999", "is not a valid URL"),
        ("http://127.0.0.1:8787/?x=1", "without a query or fragment"),
        ("https://user:secret@example.com", "credentials in the URL are not supported"),
    ],
)
def test_a_malformed_url_is_a_usage_error(
    make_project: Callable[..., Project], spec: str, message: str
) -> None:
    project = make_project(TWO_CASES)
    run = project.run("--harness", spec)
    assert run.code == 2, run.output
    assert message in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr
    assert run.run_dir is None  # refused before running


def test_bad_variant_options_void_the_trials_naming_the_key(make_project: Callable[..., Project]) -> None:
    with FaultServer() as server:
        project = make_project(TWO_CASES, config=f"""
from anpord import Variant, define_eval_config
config = define_eval_config(variants=[
    Variant(name="typo", harness={server.url!r}, options={{"max_conections": 2}}),
    Variant(name="zero", harness={server.url!r}, options={{"max_connections": 0}}),
])
""")
        run = project.run()
    assert run.code == 1
    reasons = {(r["case_id"], r["variant"]): r["reason"] for r in run.results()}
    assert reasons[("one", "typo")] == (
        "Variant options 'max_conections' are not read by the http harness "
        "(it reads max_connections, connect_timeout, cancel_grace, traces_port, traces_wait)"
    )
    assert reasons[("one", "zero")] == "Variant options max_connections must be a positive integer, got 0"
    assert {r["verdict"] for r in run.results()} == {"void"}


@pytest.fixture(scope="module")
def faults() -> Iterator[FaultServer]:
    with FaultServer() as server:
        yield server


@pytest.fixture(scope="module")
def stream_run(make_module_project: Callable[..., Project], faults: FaultServer) -> Run:
    project = make_module_project({
        "evals/truncate.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                turn = await t.send("truncate")
                turn.expect_failed("the agent server's event stream ended without its final turn.end line")
                t.called_tool("lookup", input={{"q": "truncate"}})
                {END}
        """),
        "evals/cut.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                turn = await t.send("cut")
                turn.expect_failed()
                t.check(turn.error, matches(r"ended without its final turn.end line \\(ClientPayloadError"))
                {END}
        """),
        "evals/garble.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                turn = await t.send("garble")
                turn.expect_ok()
                assert turn.message == "fine"
                notes = [e.data["message"] for e in turn.events if e.type == "log"]
                assert len(notes) == 5, notes
                assert "this is not json" in notes[0] and "{{broken" in notes[1]
                assert "ignored event type 'turn.completed'" in notes[4]
                t.event("progress", data={{"n": 1}})
                t.event("turn.completed", count=1)
                {END}
        """),
        "evals/final_only.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                turn = await t.send("final_only")
                assert turn.message == "only in the end" and turn.data == {{"k": 1}}
                t.event("message.completed", data={{"role": "assistant", "text": "only in the end"}}, count=1)
                {END}
        """),
        "evals/bad_status.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                turn = await t.send("bad_status")
                turn.expect_failed()
                assert turn.error == "the agent server ended the turn with an unknown status 'done'"
                {END}
        """),
        "evals/html_turn.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                turn = await t.send("html")
                turn.expect_failed()
                assert "answered text/html instead of an application/x-ndjson event stream" in turn.error
                {END}
        """),
        "evals/refused.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                turn = await t.send("refuse")
                turn.expect_failed()
                assert turn.error == "the agent server refused the turn: HTTP 500: database on fire"
                again = await t.send("hello")
                assert again.message == "ok: hello"
                {END}
        """),
        "evals/hang.eval.py": eval_file("""
            @define_eval(timeout=1)
            async def test(t):
                t.check(1, equals(1))
                await t.send("hang")
        """),
        "evals/ignored_cancel.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                live = await t.start("hang")
                await live.wait_for_event("progress")
                assert await live.cancel()
                turn = await live.result()
                assert turn.status == "cancelled"
                assert turn.error == "the agent server did not end the turn within 0.3s of the cancel"
                {END}
        """),
    }, config=f"""
from anpord import Variant, define_eval_config
config = define_eval_config(
    variants=[Variant(name="faults", harness={faults.url!r}, options={{"cancel_grace": 0.3}})],
    timeout=10,
)
""")
    return project.run("--json")


@pytest.mark.parametrize(
    "case_id",
    ["truncate", "cut", "garble", "final_only", "bad_status", "html_turn", "refused", "ignored_cancel"],
)
def test_a_broken_or_odd_stream_settles_the_turn_as_the_protocol_says(stream_run: Run, case_id: str) -> None:
    assert_passed(stream_run, case_id)


def test_a_failed_turn_is_a_turn_failed_event_with_the_reason(stream_run: Run) -> None:
    failed = [e for e in stream_run.events("truncate") if e["type"] == "turn.failed"]
    assert [e["error"] for e in failed] == ["the agent server's event stream ended without its final turn.end line"]


def test_a_hanging_server_times_out_and_its_request_is_aborted(stream_run: Run, faults: FaultServer) -> None:
    line = stream_run.result("hang")
    assert line["verdict"] == "timed_out"
    assert line["reason"] == "timed out after 1s"
    # The client hung up on the hanging turn (the server saw its writes fail) and deleted the session.
    # Both hanging turns normally reach the server; on a loaded machine the 1 s trial can time out
    # before its turn is sent, but the cancelled one always arrives (it waits for the progress event).
    assert len(faults.hanging) >= 1
    wait_for(lambda: sorted(faults.disconnected) == sorted(faults.hanging),
             what="every hanging turn seeing its client leave")
    deleted = {path.rsplit("/", 1)[1] for method, path in faults.requests if method == "DELETE"}
    assert set(faults.disconnected) <= deleted


def test_every_session_opened_is_deleted(stream_run: Run, faults: FaultServer) -> None:
    opened = sum(1 for r in faults.requests if r == ("POST", "/v1/sessions"))
    deleted = [r for r in faults.requests if r[0] == "DELETE"]
    assert opened == len(stream_run.results()) == len(deleted)
    assert faults.requests.count(("GET", "/v1/info")) == 1


def test_a_server_killed_mid_turn_fails_that_turn(make_project: Callable[..., Project]) -> None:
    project = make_project({
        "evals/killed.eval.py": eval_file(f"""
            import os, signal

            @define_eval
            async def test(t):
                live = await t.start("slow 30")
                await live.wait_for_event("progress", data={{"step": 1}})
                os.kill(int(os.environ["SERVER_PID"]), signal.SIGKILL)
                turn = await live.result()
                turn.expect_failed("event stream ended without its final turn.end line")
                t.event("turn.failed")
                {END}
        """),
    })
    server: Server = serve("agents.kit:agent", project.folder)
    try:
        run = project.run("--harness", server.url, env={"SERVER_PID": str(server.proc.pid)})
        assert server.proc.wait(60) == -9
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
    assert_passed(run, "killed")
    # A later run finds the server gone: void, never a pass.
    again = project.run("--harness", server.url)
    assert again.result("killed")["verdict"] == "void"
    assert "Connection refused" in again.result("killed")["reason"]
    assert not pid_alive(server.proc.pid)


def test_max_connections_1_still_cancels_at_once(make_project: Callable[..., Project]) -> None:
    """Cancels travel on their own connections: with one connection for turns, a cancel does
    not wait behind the stream it stops (the server's own 'cancelled' comes back, not the
    grace period's)."""
    project = make_project({
        "evals/cancel.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                live = await t.start("slow 30")
                await live.wait_for_event("progress")
                await live.cancel()
                turn = await live.result()
                assert turn.status == "cancelled"
                assert turn.error == "cancelled", turn.error
                {END}
        """),
    })
    server = serve("agents.kit:agent", project.folder)
    try:
        project.write({"evals/evals.config.py": f"""
            from anpord import Variant, define_eval_config
            config = define_eval_config(variants=[
                Variant(name="one", harness={server.url!r}, options={{"max_connections": 1, "cancel_grace": 20}}),
            ], timeout=15)
        """})
        run = project.run()
    finally:
        assert server.stop() == 0
    assert_passed(run, "cancel")
