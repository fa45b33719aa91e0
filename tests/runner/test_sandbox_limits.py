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
        assert line["reason"].startswith("workspace size limit reached: 8 MiB"), line["reason"]
        assert line["error"]["kind"] == "limit"
    under = make_project(cases, config=CONFIG.format(sandbox=sandbox, size=1 << 20))
    run = under.run(timeout=120)
    assert run.code == 0, run.output


# Bounded even if no cap held them: a fork bomb of 9 generations (each process forks twice,
# at most 1023 processes, each gone within a minute), a hog of at most 1 GiB.
FORKER = """python3 -c '
import os, sys, time
for generation in range(9):
    if os.fork() and os.fork():
        break  # a parent of two: sits with them
else:
    sys.stdout.write("forked them all\\n")
time.sleep(60)
'"""
HOG = """python3 -c '
chunks = [b"x" * (16 << 20) for _ in range(64)]
print("allocated them all")
'"""
CAPS_CONFIG = """
from anpord import Variant, define_eval_config
config = define_eval_config(
    timeout=60,
    max_concurrency=3,
    variants=[Variant(name="capped", sandbox="bwrap", harness='command:sh -c "$ANPORD_PROMPT"',
                      options={"memory": "128M", "pids": 32})],
)
"""


def _cgroup_members() -> set[str]:
    """Processes in any trial cgroup anpord made (there must be none once a run ended)."""
    import glob

    members: set[str] = set()
    for procs in glob.glob("/sys/fs/cgroup/**/anpord-*/cgroup.procs", recursive=True):
        try:
            members.update(open(procs).read().split())
        except OSError:
            pass
    return members


def test_a_fork_bomb_and_a_memory_hog_fail_naming_the_cap_and_the_others_pass(make_project: Any) -> None:
    project = make_project({
        "evals/caps.eval.py": eval_file(f"""
            COMMANDS = {{"forker": {FORKER!r}, "hog": {HOG!r}, "calm": "sleep 1; echo calm"}}

            @define_eval(each=list(COMMANDS), id=lambda row: row)
            async def test(t, row):
                await t.send(COMMANDS[row])
                t.check(t.reply, includes("calm"))
        """),
    }, config=CAPS_CONFIG)
    run = project.run(timeout=120)
    assert run.code == 1, run.output
    forker, hog, calm = run.result("caps/forker"), run.result("caps/hog"), run.result("caps/calm")
    assert forker["verdict"] == "failed" and forker["error"]["kind"] == "limit", forker
    assert forker["reason"].startswith("process limit reached: 32 processes"), forker["reason"]
    assert hog["verdict"] == "failed" and hog["error"]["kind"] == "limit", hog
    assert hog["reason"].startswith("memory limit reached: 128 MiB"), hog["reason"]
    assert calm["verdict"] == "passed", calm
    assert not any("forked them all" in line or "allocated them all" in line for line in run.output.splitlines())
    assert _cgroup_members() == set()  # nothing of the trials is left running


def test_a_bad_cap_voids_the_trials_naming_it(make_project: Any) -> None:
    project = make_project({
        "evals/one.eval.py": eval_file("""
            @define_eval
            async def test(t):
                await t.send("echo hi")
        """),
    }, config=CAPS_CONFIG.replace('"pids": 32', '"pids": "lots"'))
    run = project.run(timeout=60)
    line = run.result("one")
    assert line["verdict"] == "void", line
    assert "Variant options pids: 'lots' is not a number of processes" in line["reason"]
