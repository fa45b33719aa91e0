"""The trial page of a traced trial: its spans as a timeline nested by parent."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from traces_support import SCRIPTED_EVAL, variant, write_agents
from view_support import trial_path, view_server


def test_the_trial_page_shows_the_trace_nested(make_project: Any, tmp_path: Path) -> None:
    agents = write_agents(tmp_path / "otel_agents")
    config = ("from anpord import Variant, define_eval_config\n"
              f"config = define_eval_config(timeout=60, variants=[{variant('local', agents, 'otel_protobuf.py')}])\n")
    project = make_project({"evals/scripted.eval.py": SCRIPTED_EVAL}, config=config)
    run = project.run(timeout=120)
    assert run.code == 0, run.output
    assert run.run_dir is not None
    with view_server(project.folder) as server:
        status, _, page = server.get(trial_path(run.run_dir.name, "scripted", "otel_protobuf.py", 0))
    assert status == 200, page
    section = page[page.index('<section id="trace">'):page.index('<section id="timeline">')]
    rows = re.findall(r'<tr class="k-(\w+) s-(\w+)" data-span="(\w+)" data-parent="(\w*)" data-depth="(\d)">'
                      r'\s*<td class="span-name"[^>]*>(.*?)</td>', section, re.S)
    assert len(rows) == 4, section
    root = rows[0]
    assert (root[0], root[3], root[4]) == ("span", "", "0") and "invoke_agent weather" in root[5]
    children = {re.sub(r"<[^>]+>|└", "", r[5]).split()[1]: r for r in rows[1:]}
    assert set(children) == {"chat", "get_weather", "get_alerts"}, children
    for kind, status_, _, parent, depth, _ in rows[1:]:
        assert parent == root[2] and depth == "1"
    assert children["get_alerts"][1] == "failed" and children["get_weather"][0] == "tool"
    assert "120 in / 30 out tokens" in section and "sunny" in section
