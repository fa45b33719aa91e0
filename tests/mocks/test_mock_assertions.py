"""``t.mock(name).called`` / ``.not_called`` as a user writes them from docs/mocks.md: a ``*`` in
``route_or_tool`` matches any run of characters (so ``not_called("DELETE /orders/*")`` fails when
the agent deleted an order), and a filter the mock's kind has no field for, or a negative count,
is a usage error (the assertion's status ``error``, the trial ``failed`` saying it raised), never a check that quietly cannot match or cannot fail."""

from __future__ import annotations

from typing import Any

import pytest
from project_support import eval_file

from anpord.mocks import http_mock
from anpord.mocks._assert import called, not_called

AGENT = '''
import asyncio, subprocess, urllib.request

def delete(url):
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=10)
    except urllib.error.HTTPError as e:
        return e.code
    return 200

async def agent(turn):
    status = await asyncio.to_thread(delete, turn.mocks["pay"].url + "/orders/A1")
    gh = turn.mocks["gh"].path
    done = await asyncio.to_thread(subprocess.run, [gh, "pr", "close", "7"], capture_output=True, text=True,
                                   stdin=subprocess.DEVNULL)
    return f"{status} {done.stdout.strip()}"
'''

CONFIG = '''
from anpord import define_eval_config
from anpord.mocks import cli_mock, http_mock

config = define_eval_config(timeout=60, harness="python:agents.closer:agent", mocks=[
    http_mock("pay", routes={"GET /orders/*": {"json": {"state": "shipped"}}}),
    cli_mock("gh", responses=[{"argv": ["pr", "close", "7"], "stdout": "closed"}])])
'''

# One case per file, each ending in the assertion it is about.
CASES = {
    "evals/deleted_an_order.eval.py": eval_file('''
    @define_eval
    async def deleted_an_order(t):
        await t.send("tidy up")
        t.mock("pay").not_called("DELETE /orders/*")
    '''),
    "evals/closed_a_pr.eval.py": eval_file('''
    @define_eval
    async def closed_a_pr(t):
        await t.send("tidy up")
        t.mock("gh").not_called("gh pr close *")
    '''),
    "evals/globs_that_hold.eval.py": eval_file('''
    @define_eval
    async def globs_that_hold(t):
        await t.send("tidy up")
        t.check(t.reply, equals("404 closed"))
        t.mock("pay").called("* /orders/*", count=1)
        t.mock("pay").called("DELETE /orders/A*")
        t.mock("pay").not_called("GET /orders/*")
        t.mock("gh").called("gh pr *")
        t.mock("gh").called("pr close 7")
        t.mock("gh").not_called("gh pr merge *")
    '''),
    "evals/json_on_a_cli_mock.eval.py": eval_file('''
    @define_eval
    async def json_on_a_cli_mock(t):
        await t.send("tidy up")
        t.mock("gh").called(json={"number": 7})
    '''),
    "evals/argv_on_an_http_mock.eval.py": eval_file('''
    @define_eval
    async def argv_on_an_http_mock(t):
        await t.send("tidy up")
        t.mock("pay").not_called(argv=["rm"])
    '''),
    "evals/negative_count.eval.py": eval_file('''
    @define_eval
    async def negative_count(t):
        await t.send("tidy up")
        t.mock("pay").called(count=-1)
    '''),
}


@pytest.fixture(scope="module")
def run(make_module_project: Any) -> Any:
    project = make_module_project({**CASES, "agents/closer.py": AGENT}, config=CONFIG)
    return project.run("--json", timeout=120)


def _assertion(line: dict[str, Any]) -> dict[str, Any]:
    last = line["assertions"][-1]
    assert last["name"].startswith("mock("), line["assertions"]
    return last


@pytest.mark.parametrize("case, seen", [("deleted_an_order", "DELETE /orders/A1 → 404"),
                                        ("closed_a_pr", "gh pr close 7 → exit 0")])
def test_a_star_in_not_called_matches_the_call_so_the_check_fails(run: Any, case: str, seen: str) -> None:
    line = run.result(case)
    assert line["verdict"] == "failed", line
    assert seen in _assertion(line)["message"], line["assertions"]


def test_globs_match_what_they_should_and_nothing_else(run: Any) -> None:
    line = run.result("globs_that_hold")
    assert line["verdict"] == "passed", (line["reason"], line["assertions"])
    assert len(line["assertions"]) == 7


@pytest.mark.parametrize("case, message", [
    ("json_on_a_cli_mock", "json= filters an HTTP request's JSON body, and mock gh is a CLI mock "
                           "(its filters: argv= or input=)"),
    ("argv_on_an_http_mock", "argv= filters a CLI call's arguments, and mock pay is an HTTP mock "
                             "(its filters: json=)"),
    ("negative_count", "count must be 0 or more, not -1"),
])
def test_a_filter_or_count_that_cannot_apply_is_a_usage_error(run: Any, case: str, message: str) -> None:
    line = run.result(case)
    found = _assertion(line)
    assert found["status"] == "error" and found["message"] == message, found
    assert line["verdict"] == "failed" and line["reason"].endswith(f"raised: {message}"), line["reason"]


def test_a_star_in_a_declared_route_matches_any_run_of_characters_anywhere() -> None:
    (orders, items, exact) = http_mock("pay", routes={"GET /orders/*": {}, "* /users/*/items": {}, "GET /a.b": {}}).routes
    assert orders.matches("GET", "/orders/A1") and orders.matches("GET", "/orders/") and orders.matches("GET", "/orders/a/b")
    assert not orders.matches("GET", "/orders") and not orders.matches("POST", "/orders/A1")
    assert items.matches("DELETE", "/users/7/items") and items.matches("GET", "/users/a/b/items")
    assert not items.matches("GET", "/users/7/items/1") and not items.matches("GET", "/users/7/item")
    assert exact.matches("GET", "/a.b") and not exact.matches("GET", "/aXb")  # "." is itself


HTTP_CALL = {"mock": "pay", "kind": "http", "route": "GET /orders/*", "method": "GET", "path": "/orders/A1",
             "status": 200}


def test_a_star_is_a_wildcard_only_in_route_or_tool_and_everything_else_is_literal() -> None:
    calls = [HTTP_CALL]
    assert called("pay", calls, "GET /orders/*", [], None).ok          # the declared route, literally
    assert called("pay", calls, "GET /*/A1", [], None).ok               # "*" in the middle
    assert not called("pay", calls, "GET /orders/A", [], None).ok       # no "*": exact, as before
    assert not called("pay", calls, "POST /*", [], None).ok
    assert not called("pay", calls, "GET /orders/A1.", [], None).ok     # "." is not a wildcard
    failed = called("pay", calls, "GET /ord?rs/*", [], None)            # nor "?"
    assert not failed.ok and "GET /orders/A1 → 200" in failed.message
    outcome = not_called("pay", calls, "GET /orders/A*", [], None)
    assert not outcome.ok and outcome.error is None and "was called 1 time" in outcome.message
