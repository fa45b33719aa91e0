"""A trial that writes past its sandbox's size cap fails with that reason, and the run goes on."""

from __future__ import annotations

from typing import Any

import pytest
from project_support import eval_file

CONFIG = """
from anpord import Variant, define_eval_config
config = define_eval_config(
    timeout=30,
    variants=[Variant(name="capped", sandbox={sandbox!r},
                      harness="command:head -c {size} /dev/zero > big.bin; echo wrote",
                      options={{"sandbox_size": "8M"}})],
)
"""


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_a_trial_over_its_size_cap_fails_with_that_reason(make_project: Any, sandbox: str) -> None:
    cases = {
        "evals/fill.eval.py": eval_file("""
            @define_eval(each=["big", "small"], id=lambda row: row)
            async def test(t, row):
                await t.send(row)
                t.check(t.reply, includes("wrote"))
        """),
    }
    over = make_project(cases, config=CONFIG.format(sandbox=sandbox, size=64 << 20))
    run = over.run(timeout=120)
    assert run.code == 1, run.output
    for line in run.results():
        assert line["verdict"] == "failed", line
        assert "size cap of 8 MiB exceeded" in line["reason"], line["reason"]
        assert line["error"]["kind"] == "limit"
    under = make_project(cases, config=CONFIG.format(sandbox=sandbox, size=1 << 20))
    run = under.run(timeout=120)
    assert run.code == 0, run.output
