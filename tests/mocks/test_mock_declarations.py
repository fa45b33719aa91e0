"""Bad mock declarations: a one-line error naming the file and the field, exit 2; and the
declarations' own checks, in process."""

from __future__ import annotations

from typing import Any

import pytest
from project_support import eval_file

from anpord import Variant, define_eval, define_eval_config
from anpord.authoring import DefinitionError
from anpord.mocks import cli_mock, http_mock, mcp_mock, mcp_tool


@pytest.mark.parametrize(("body", "message"), [
    ('http_mock("pay", routes={"FETCH /x": {}})', "http_mock 'pay': routes['FETCH /x']: a route is \"METHOD /path\""),
    ('http_mock("pay", routes={"GET x": {}})', "routes['GET x']: a route is"),
    ('http_mock("pay", routes={"GET /search?q=shoes": {}})',
     "routes['GET /search?q=shoes']: a route's path has no query string or fragment"),
    ('http_mock("pay", routes={"GET /docs#intro": {}})', "routes['GET /docs#intro']: a route's path has no query"),
    ('http_mock("pay", routes={"GET /x": {"stauts": 200}})', "routes['GET /x']: unknown key(s) stauts"),
    ('http_mock("pay", routes={"GET /x": {"json": {}, "text": ""}})', "give json or text, not both"),
    ('cli_mock("gh", responses=[{"argv": ["a"], "exitcode": 1}])', "cli_mock 'gh': responses[0]: unknown key(s) exitcode"),
    ('cli_mock("gh", responses=[{"argv": ["pr", "view", 7]}])',
     "cli_mock 'gh': responses[0]: argv[2] must be a string, a regex or a predicate (arguments are text), got 7"),
    ('mcp_mock("crm", tools=[mcp_tool("look up")])', "mcp_tool name must be 1-128 letters, digits"),
    ('mcp_mock("crm", tools=[mcp_tool("a"), mcp_tool("a")])', "mcp_mock 'crm': tools has two tools named 'a'"),
    ('http_mock("my mock")', "http_mock name must be"),
    ('http_mock("pay", routes={"GET /x": {"json": {"v": float("nan")}}})', "routes['GET /x']: json is not JSON"),
    ('http_mock("pay", routes={"GET /x": {"json": [float("inf")]}})', "routes['GET /x']: json is not JSON"),
    ('http_mock("pay", routes={"GET /x": {"delay": float("nan")}})', "routes['GET /x']: delay must be seconds"),
    ('http_mock("pay", routes={"GET /x": {"delay": float("inf")}})', "routes['GET /x']: delay must be seconds"),
    ('http_mock("pay", routes={"GET /x": {"headers": {"X": "a\\r\\nSet-Cookie: b"}}})',
     "routes['GET /x']: header X: its value 'a\\r\\nSet-Cookie: b' holds a control character"),
    ('http_mock("pay", routes={"GET /x": {"headers": {"X\\nY": "a"}}})',
     "routes['GET /x']: header name 'X\\nY' is not an HTTP token"),
    ('http_mock("pay", routes={"GET /x": {"status": 1000}})', "routes['GET /x']: status must be an HTTP status code"),
    ('http_mock("pay-api"), http_mock("pay_api")',
     "mocks= has two HTTP mocks, 'pay-api' and 'pay_api', whose URL is one variable, ANPORD_MOCK_PAY_API_URL"),
    ('http_mock("Pay_API"), http_mock("pay_api")', "two HTTP mocks, 'Pay_API' and 'pay_api', whose URL is one variable"),
])
def test_a_bad_declaration_exits_2_naming_file_and_field(make_project: Any, body: str, message: str) -> None:
    case = eval_file(f'''
        from anpord.mocks import http_mock, cli_mock, mcp_mock, mcp_tool

        @define_eval(mocks=[{body}])
        async def bad(t):
            await t.send("hi")
    ''')
    project = make_project({"evals/bad.eval.py": case})
    run = project.run()
    assert run.code == 2, run.output
    line = run.stderr.strip().splitlines()
    assert len(line) == 1 and "Traceback" not in run.stderr, run.stderr
    assert "evals/bad.eval.py" in line[0] and message in line[0], line[0]


def test_duplicate_names_are_refused_everywhere() -> None:
    a, b = http_mock("pay"), cli_mock("pay")
    with pytest.raises(DefinitionError, match="define_eval mocks= has two mocks named 'pay'"):
        define_eval(prompt="x", mocks=[a, b])
    with pytest.raises(DefinitionError, match="Variant mocks= has two mocks named 'pay'"):
        Variant(mocks=[a, b])
    with pytest.raises(DefinitionError, match="define_eval_config mocks= has two mocks named 'pay'"):
        define_eval_config(mocks=[a, b])
    with pytest.raises(DefinitionError, match=r"mocks\[0\] must be http_mock/cli_mock/mcp_mock"):
        define_eval(prompt="x", mocks=[{"name": "pay"}])
    with pytest.raises(DefinitionError, match="schema must be a JSON schema of type object"):
        mcp_tool("t", schema={"type": "string"})
    assert Variant(mocks=a).mocks == (a,)  # one mock alone is a list of one
    assert mcp_mock("crm").tools == ()


def test_a_bad_config_declaration_names_the_config(make_project: Any) -> None:
    config = ("from anpord import define_eval_config\nfrom anpord.mocks import http_mock\n"
              "config = define_eval_config(harness='python:agents.kit:agent', "
              "mocks=[http_mock('pay', routes={'GET /x': {'delay': -1}})])\n")
    project = make_project({"evals/ok.eval.py": eval_file('''
        @define_eval
        async def ok(t):
            await t.send("hi")
    ''')}, config=config)
    run = project.run()
    assert run.code == 2, run.output
    assert "evals.config.py" in run.stderr and "routes['GET /x']: delay must be seconds" in run.stderr, run.stderr


def test_mocks_of_two_levels_with_one_url_variable_exit_2(make_project: Any) -> None:
    config = ("from anpord import define_eval_config\nfrom anpord.mocks import http_mock\n"
              "config = define_eval_config(harness='python:agents.kit:agent', mocks=[http_mock('pay-api')])\n")
    project = make_project({"evals/clash.eval.py": eval_file('''
        from anpord.mocks import http_mock

        @define_eval(mocks=[http_mock("Pay_API")])
        async def clash(t):
            await t.send("hi")
    ''')}, config=config)
    run = project.run()
    assert run.code == 2, run.output
    line = run.stderr.strip().splitlines()
    assert len(line) == 1 and "evals/clash.eval.py" in line[0], run.stderr
    assert "two HTTP mocks, 'pay-api' and 'Pay_API', whose URL is one variable" in line[0], line[0]
