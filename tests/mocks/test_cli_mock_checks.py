"""A CLI mock is on the PATH of what the checks run too: ``context.exec`` and ``command(...)``
verifiers, under local and bwrap — for a Python agent with no source as well (the sandbox then
opens with the trial, so the checks' commands have the program)."""

from __future__ import annotations

from typing import Any

import pytest
from project_support import eval_file

CASE = eval_file('''
    from anpord.mocks import cli_mock
    from anpord.verifiers import command

    async def validate(context):
        result = await context.exec("kubectl get pods -n prod")
        calls = context.mock("kubectl").calls
        ok = (result.exit_code == 0 and result.stdout == "web-1 Running\\n"
              and [c["argv"] for c in calls] == [["get", "pods", "-n", "prod"]])
        return ok, f"exec: {result}; calls: {calls}"

    case = define_eval(prompt="weather Paris", validate=[validate, command("kubectl rollout status web")],
                       mocks=[cli_mock("kubectl", responses=[
                           {"argv": ["get", "pods", "-n", "prod"], "stdout": "web-1 Running\\n"},
                           {"argv": ["rollout", "status", "web"], "stdout": "1 passed\\n"}])])
''')


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_checks_run_the_mocked_program(make_project: Any, sandbox: str) -> None:
    config = ("from anpord import define_eval_config\n"
              f"config = define_eval_config(harness='python:agents.kit:agent', sandbox={sandbox!r}, timeout=30)\n")
    project = make_project({"evals/checks.eval.py": CASE}, config=config)
    run = project.run("--json", timeout=120)
    line = run.result("checks")
    assert line["verdict"] == "passed", (line["reason"], line["assertions"], run.trial("checks")["logs"])
