"""HTTP mocks, run by the real runner: a command agent (a real subprocess) calls a real loopback
server of its trial; unknown routes are 404s, a route that raises a 500 the record explains, and
the checks read the calls (failures name the mock and show what it received)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mocks_support import config, write_agent
from project_support import assert_passed, eval_file

# A command agent: posts a refund to the payments API it finds in its environment, then asks an
# unknown path and a route whose function raises, and prints what it got back.
AGENT = r'''
import json, os, urllib.request, urllib.error
base = os.environ["ANPORD_MOCK_PAY_URL"]
def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json", "Authorization": "Bearer sk-live-123"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)
s1, b1, h1 = call("POST", "/refunds?dry=1", {"order": "A1", "amount": 5})
s2, b2, _ = call("GET", "/nowhere")
s3, b3, _ = call("GET", "/boom")
s4, b4, _ = call("GET", "/orders/A1")
print(json.dumps({"refund": [s1, json.loads(b1), h1.get("X-Mock")], "missing": [s2, b2], "boom": [s3, b3], "order": [s4, json.loads(b4)]}))
'''

PAY = """
from anpord.mocks import http_mock

def boom(request):
    raise RuntimeError("ledger offline")

def order(request):
    return {"id": request.path.rsplit("/", 1)[1], "state": "shipped"}

PAY = http_mock("pay", routes={
    "POST /refunds": {"status": 201, "json": {"id": "r_1"}, "headers": {"X-Mock": "yes"}},
    "GET /boom": boom,
    "GET /orders/*": order,
})
"""

REFUND = eval_file('''
    @define_eval(mocks=[PAY])
    async def refund(t):
        await t.send("refund order A1")
        out = json.loads(t.reply)
        t.check(out["refund"], equals([201, {"id": "r_1"}, "yes"]))
        t.check(out["missing"][0], equals(404))
        t.check(out["missing"][1], includes("no route for GET /nowhere"))
        t.check(out["boom"][0], equals(500))
        t.check(out["boom"][1], includes("RuntimeError: ledger offline"))
        t.check(out["order"], equals([200, {"id": "A1", "state": "shipped"}]))
        t.mock("pay").called("POST /refunds", json={"order": "A1"}, count=1)
        t.mock("pay").called("GET /orders/*")
        t.mock("pay").not_called("DELETE /refunds")
        calls = t.mock("pay").calls
        t.check(len(calls), equals(4))
        t.check(calls[0]["query"], equals({"dry": "1"}))
        t.check(calls[0]["headers"]["authorization"], equals("[hidden]"))
        t.check(calls[1]["status"], equals(404))
        t.check(calls[2]["error"], includes("ledger offline"))
        t.check("end", equals("end")).label("reached the end")
''', imports="from pay_mock import PAY")

MISSES = eval_file('''
    @define_eval(mocks=[PAY])
    async def misses(t):
        await t.send("refund order A1")
        t.mock("pay").called("POST /refunds", json={"order": "B7"})
        t.mock("pay").not_called("GET /boom")
        t.mock("nope").called()
''', imports="from pay_mock import PAY")


def test_an_http_mock_answers_records_and_is_asserted(make_project: Any, tmp_path: Path) -> None:
    agent = write_agent(tmp_path / "agents", "pay_agent.py", AGENT)
    project = make_project({"evals/pay_mock.py": PAY, "evals/refund.eval.py": REFUND,
                            "evals/misses.eval.py": MISSES}, config=config(agent))
    run = project.run("--json", timeout=120)
    assert_passed(run, "refund")
    events = [e for e in run.events("refund") if e["type"] == "mock.called"]
    assert [(e["method"], e["path"], e["status"]) for e in events] == [
        ("POST", "/refunds", 201), ("GET", "/nowhere", 404), ("GET", "/boom", 500), ("GET", "/orders/A1", 200)]
    # The route that raised: the record says why.
    assert any("route GET /boom raised RuntimeError: ledger offline" in line for line in run.trial("refund")["logs"])
    # Failures name the mock and show what it received.
    by_name = {a["name"]: a for a in run.result("misses")["assertions"]}

    def named(part: str) -> dict[str, Any]:
        found = [a for n, a in by_name.items() if part in n]
        assert len(found) == 1, (part, list(by_name))
        return found[0]

    wrong = named('called("POST /refunds"')
    assert wrong["status"] == "failed"
    assert "mock pay received no call matching" in wrong["message"]
    assert 'POST /refunds {"order": "A1", "amount": 5} → 201' in wrong["message"]
    boom = named('not_called("GET /boom"')
    assert "mock pay was called 1 time (expected none): GET /boom → 500" in boom["message"]
    unknown = named("mock('nope')")
    assert unknown["status"] == "error" and "no mock named 'nope'" in unknown["message"], unknown
    assert run.result("misses")["verdict"] == "failed"


RAW_AGENT = '''
import asyncio, http.client, json, urllib.parse

def get(base, path):
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        conn.request("GET", path)
        reply = conn.getresponse()
        return [reply.status, reply.read().decode(), reply.getheader("Set-Cookie")]
    except Exception as exc:
        return [None, repr(exc), None]
    finally:
        conn.close()

async def agent(turn):
    paths = json.loads(turn.input)
    return json.dumps({p: await asyncio.to_thread(get, turn.mocks["pay"].url, p) for p in paths})
'''

BAD_ANSWERS = eval_file('''
    from anpord.mocks import http_mock

    ANSWERS = {
        "/low": {"status": 99}, "/high": {"status": 1000},
        "/split": {"headers": {"X": "a\\r\\nSet-Cookie: b"}, "text": "t"},
        "/name": {"headers": {"X\\nY": "a"}, "text": "t"},
        "/nan": {"v": float("nan")}, "/inf": {"json": float("inf")},
    }

    PAY = http_mock("pay", routes={"GET /*": lambda request: ANSWERS[request.path]})

    @define_eval(mocks=[PAY])
    async def bad_answers(t):
        await t.send(json.dumps(list(ANSWERS)))
        got = json.loads(t.reply)
        why = {"/low": "status must be an HTTP status code (100-599), got 99",
               "/high": "status must be an HTTP status code (100-599), got 1000",
               "/split": "header X: its value", "/name": "header name 'X\\\\nY' is not an HTTP token",
               "/nan": "json is not JSON-serialisable", "/inf": "json is not JSON-serialisable"}
        for path, reason in why.items():
            t.check(got[path][0], equals(500)).label(f"{path} status")
            t.check(got[path][1], includes("route GET /* returned an answer HTTP cannot carry: " + reason)).label(path)
            t.check(got[path][2], equals(None)).label(f"{path} set no cookie")
        errors = [c["error"] for c in t.mock("pay").calls]
        t.check(all(e and "cannot carry" in e for e in errors), equals(True)).label("recorded why")
        t.check("end", equals("end")).label("reached the end")
''')


def test_a_route_function_answer_http_cannot_carry_is_a_500_saying_why(make_project: Any) -> None:
    config = ("from anpord import define_eval_config\n"
              "config = define_eval_config(harness='python:agents.raw:agent', timeout=30)\n")
    project = make_project({"agents/raw.py": RAW_AGENT, "evals/bad_answers.eval.py": BAD_ANSWERS}, config=config)
    run = project.run("--json", timeout=120)
    assert_passed(run, "bad_answers")


KEY_HEADERS = {"X-Goog-Api-Key": "AIzaSy-secret-1", "Ocp-Apim-Subscription-Key": "secret-2",
               "X-Auth-Token": "secret-3", "Private-Token": "secret-4", "X-Amz-Security-Token": "secret-5",
               "Api-Key": "secret-6", "X-Api-Key": "secret-7", "Proxy-Authorization": "Basic secret-8"}

KEY_AGENT = f'''
import asyncio, urllib.request

def get(url):
    req = urllib.request.Request(url, headers={KEY_HEADERS!r} | {{"X-Trace": "kept"}})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read().decode()

async def agent(turn):
    return await asyncio.to_thread(get, turn.mocks["pay"].url + "/x")
'''

KEYS = eval_file('''
    from anpord.mocks import http_mock

    @define_eval(mocks=[http_mock("pay", routes={"GET /x": {"text": "ok"}})])
    async def keys(t):
        await t.send("go")
        t.check(t.reply, equals("ok"))
''')


def test_api_key_headers_of_well_known_apis_are_hidden(make_project: Any) -> None:
    config = ("from anpord import define_eval_config\n"
              "config = define_eval_config(harness='python:agents.keys:agent', timeout=30)\n")
    project = make_project({"agents/keys.py": KEY_AGENT, "evals/keys.eval.py": KEYS}, config=config)
    run = project.run("--json", timeout=120)
    assert run.result("keys")["verdict"] == "passed", run.output
    call = next(e for e in run.events("keys") if e["type"] == "mock.called")
    assert {k: call["headers"][k.lower()] for k in KEY_HEADERS} == dict.fromkeys(KEY_HEADERS, "[hidden]")
    assert call["headers"]["x-trace"] == "kept"
    stored = "".join(p.read_text(errors="replace") for p in run.run_dir.rglob("*") if p.is_file())
    assert not any(secret in stored for secret in KEY_HEADERS.values())
