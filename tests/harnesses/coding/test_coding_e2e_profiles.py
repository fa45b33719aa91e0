"""Profiles end to end: ``Variant(profile=...)`` copies the profile's files into the trial's HOME and
workspace, runs its install step, gives the CLI its environment and system prompt (each CLI the
way it takes one), and records the profile's content hash on every trial; variants compare
profiles like models; a failed install voids the trial; a profile pointing outside itself stops
the run before it starts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from e2e_support import SANDBOXES, coding_project, install_standins, run, variant
from project_support import Run

from anpord.harnesses import load_profile

TOOLS = "replay:claude-code/recorded__canned-model__bash-exit-codes.jsonl"
CODEX = "replay:codex/jnarowski__agentcmd__stream-output-2.jsonl"

PROFILES = {
    "evals/profiles/terse/system.md": "Be terse.\n",
    "evals/profiles/terse/profile.yaml": """
        description: short answers
        env:
          TONE: dry
        install:
          - echo preparing; touch "$HOME/installed"
          - echo "tone is $TONE" > "$HOME/install-saw"
    """,
    "evals/profiles/terse/home/.claude/settings.json": '{"theme": "dark"}\n',
    "evals/profiles/terse/workspace/CONVENTIONS.md": "Use tabs.\n",
    "evals/profiles/house/home/.codex/AGENTS.md": "House rules: run the tests.\n",
    "evals/profiles/house/system.md": "Be careful.\n",
    "evals/profiles/broken/profile.yaml": """
        install: "echo fetching deps; echo 'E: Unable to locate package nope' >&2; exit 100"
    """,
}

CHECK_EVAL = f'''
    from anpord import define_eval, files

    async def applied(c):
        home = await c.exec('cat "$HOME/.claude/settings.json" "$HOME/install-saw" && test -f "$HOME/installed"')
        ok = c.read_text("CONVENTIONS.md") == "Use tabs.\\n" and home.exit_code == 0
        return ok, home.output

    case = define_eval(prompt={TOOLS!r}, source=files({{"README.md": "r\\n"}}), validate=applied)
'''


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_profile_reaches_the_trial_and_its_hash_is_recorded(tmp_path: Path, sandbox: str) -> None:
    standins = install_standins(tmp_path / "standins")
    project = coding_project(tmp_path / "proj", [
        variant("claude", sandbox, standins, profile="terse"),
        variant("claude", sandbox, standins, profile="house"),
        variant("codex", sandbox, standins, profile="house"),
        variant("claude", sandbox, standins, profile="broken"),
        variant("claude", sandbox, standins, profile="missing"),
    ], {**PROFILES, "evals/check.eval.py": CHECK_EVAL})
    done = run(project)
    got = {r["variant"]: (r["verdict"], r["reason"]) for r in done.results()}
    # Variants differ by profile like by model: the label says which.
    assert set(got) == {"claude/default@terse", "claude/default@house", "codex/default@house",
                        "claude/default@broken", "claude/default@missing"}
    assert got["claude/default@terse"] == ("passed", "")
    assert got["claude/default@house"][0] == "failed"  # no CONVENTIONS.md without the terse profile
    assert got["claude/default@broken"] == (
        "void",
        ("profile 'broken': its install step exited 100: echo fetching deps; echo 'E: Unable to locate "
        "package nope' >&2; exit 100: fetching deps | E: Unable to locate package nope"),
    )
    verdict, reason = got["claude/default@missing"]
    assert verdict == "void"
    assert reason == (f"profile 'missing' not found: expected the folder "
                      f"{project.path('evals/profiles/missing')}; profiles there: broken, house, terse")

    events = {label: _events(done, label)
              for label in ("claude/default@terse", "claude/default@house", "codex/default@house")}
    # The hash of every file of the profile, on each trial that used it.
    terse = load_profile("terse", project.path("evals/profiles"))
    [applied] = [e for e in events["claude/default@terse"] if e["type"] == "profile.applied"]
    assert applied["name"] == "terse" and applied["hash"] == terse.hash and applied["files"] == 4
    assert [(i["command"], i["exit_code"]) for i in applied["install"]] == [
        ('echo preparing; touch "$HOME/installed"', 0), ('echo "tone is $TONE" > "$HOME/install-saw"', 0)]
    house = load_profile("house", project.path("evals/profiles"))
    for label in ("claude/default@house", "codex/default@house"):
        [applied] = [e for e in events[label] if e["type"] == "profile.applied"]
        assert (applied["name"], applied["hash"]) == ("house", house.hash)
    assert terse.hash != house.hash

    # The system prompt, each CLI's way; the profile's environment.
    [claude] = [e["raw"] for e in events["claude/default@terse"] if e["type"] == "claude.standin.report"]
    assert claude["argv"][claude["argv"].index("--append-system-prompt") + 1] == "Be terse.\n"
    assert claude["env"]["TONE"] == "dry"
    [codex] = [e["raw"] for e in events["codex/default@house"] if e["type"] == "codex.standin.report"]
    # The profile's own ~/.codex/AGENTS.md stays, the system prompt after it.
    assert codex["instructions"] == {".codex/AGENTS.md": "House rules: run the tests.\n\nBe careful.\n"}


def _events(done: Run, label: str) -> list[dict[str, Any]]:
    reading = done.reading()
    record = next(t for t in reading.trials if t.variant == label)
    return [e.to_dict() for e in reading.events(record)]


def test_a_changed_profile_gets_another_hash(tmp_path: Path) -> None:
    standins = install_standins(tmp_path / "standins")
    project = coding_project(tmp_path / "proj", [variant("claude", "local", standins, profile="terse")],
                             {**PROFILES, "evals/check.eval.py": CHECK_EVAL})
    before = [e["hash"] for e in run(project).events("check") if e["type"] == "profile.applied"]
    project.path("evals/profiles/terse/workspace/CONVENTIONS.md").write_text("Use spaces.\n")
    after = [e["hash"] for e in run(project).events("check") if e["type"] == "profile.applied"]
    assert len(before) == len(after) == 1 and before != after


@pytest.mark.parametrize("escape", ["link", "system"])
def test_a_profile_pointing_outside_itself_stops_the_run(tmp_path: Path, escape: str) -> None:
    standins = install_standins(tmp_path / "standins")
    secret = tmp_path / "host-secret"
    secret.write_text("do not copy me\n")
    files = {"evals/check.eval.py": CHECK_EVAL, "evals/profiles/leaky/system.md": "hi\n"}
    if escape == "system":
        files["evals/profiles/leaky/profile.yaml"] = "system: ../../../host-secret\n"
    project = coding_project(tmp_path / "proj", [variant("claude", "local", standins, profile="leaky")], files)
    if escape == "link":
        (project.path("evals/profiles/leaky/home")).mkdir()
        os.symlink(secret, project.path("evals/profiles/leaky/home/.netrc"))
    done = run(project)
    assert done.code == 2, done.output
    message = {
        "link": f"anpord eval: profile 'leaky': home/.netrc is a link to {secret}, outside the profile "
                "(copy the file into the profile instead)",
        "system": "anpord eval: profile 'leaky': system: ../../../host-secret points outside the profile",
    }[escape]
    assert done.stderr.strip() == message
    assert done.run_dir is None  # nothing ran


def test_files_a_profile_puts_in_the_workspace_are_not_the_agents_changes(tmp_path: Path) -> None:
    standins = install_standins(tmp_path / "standins")
    project = coding_project(tmp_path / "proj", [variant("claude", "local", standins, profile="terse")], {
        **PROFILES,
        "evals/changed.eval.py": f'''
            from anpord import define_eval, files
            case = define_eval(prompt={TOOLS!r}, source=files({{}}),
                               validate=lambda c: (c.files_changed() == ["notes.txt"], str(c.files_changed())))
        ''',
    })
    done = run(project)
    assert done.verdicts() == {"changed": "passed"}, done.output
