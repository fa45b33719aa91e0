"""``anpord eval --harness X`` on a project whose variants work: the new variant keeps the first
selected variant's sandbox, network, mounts, env, secrets and profile; a coding CLI's own key
variables reach it as secrets (redacted) without being declared; ``--secret``, ``--env``,
``--profile``, ``--network`` and ``--mount`` set those fields from the command line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from e2e_support import SECRET, coding_project, install_standins, reports, run, variant

GEMINI = "replay:gemini-cli/recorded__canned-model__tools.jsonl"
CODEX = "replay:codex/jnarowski__agentcmd__stream-output-1.jsonl"
TOKEN = "tok-project-secret-0123456789"


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def project_for(tmp_path: Path, prompt: str) -> tuple[Path, object]:
    standins = install_standins(tmp_path / "standins")
    project = coding_project(tmp_path / "proj", [
        # The first variant: bwrap with the stand-ins mounted, a profile, env and a secret of its own.
        variant("claude", "bwrap", standins, name="first", profile="house", env={
            "PATH": f"{standins}:/usr/bin:/bin", "TONE": "from-the-variant"},
            secrets=["ANTHROPIC_API_KEY", "PROJECT_TOKEN"], options={"system_prompt": "Variant says hi."}),
        variant("codex", "bwrap", standins, name="second", secrets=["CODEX_API_KEY"],
                env={"PATH": f"{standins}:/usr/bin:/bin", "TONE": "from-the-second"}),
    ], {
        "evals/task.eval.py": f'''
            from anpord import define_eval, files
            case = define_eval(prompt={prompt!r}, source=files({{}}), validate=lambda c: True)
        ''',
        "evals/profiles/house/system.md": "House rules.\n",
        "evals/profiles/house/profile.yaml": "env:\n  PROFILE_TONE: from-the-profile\n",
        "evals/profiles/other/system.md": "Other rules.\n",
    })
    return standins, project


def test_harness_keeps_the_first_variants_machine_profile_and_secrets(tmp_path: Path) -> None:
    _, project = project_for(tmp_path, GEMINI)
    done = run(project, "--harness", "gemini", env={"PROJECT_TOKEN": TOKEN})
    (result,) = done.results()
    # The label names the profile it kept; no key was declared for gemini, yet it signed in.
    assert (result["variant"], result["verdict"]) == ("gemini/default@house", "passed"), done.output
    (report,) = reports(done, "task", "gemini")
    assert report["env"]["TONE"] == "from-the-variant"
    assert report["env"]["PROFILE_TONE"] == "from-the-profile"
    # The profile's system prompt reached gemini; claude's options did not.
    assert report["instructions"] == {".gemini/GEMINI.md": "House rules.\n"}
    # The key was passed to the trial, where the model proxy (on by default) keeps it: gemini
    # holds the proxy's stand-in, which it gets only for a key the trial has.
    assert report["keys"]["GEMINI_API_KEY"] not in (None, digest(SECRET))
    (snapshot,) = done.run_json()["variants"]
    assert snapshot["sandbox"] == "bwrap" and snapshot["profile"] == "house"
    assert snapshot["options"] == {}
    assert set(snapshot["secrets"]) >= {"ANTHROPIC_API_KEY", "PROJECT_TOKEN", "GEMINI_API_KEY"}
    # Every secret is redacted from what the run wrote.
    # (Not the workspace snapshots: they keep the workspace as the agent left it, unredacted and
    # compressed, as docs/results.md says.)
    written = "".join(p.read_text() for p in done.run_dir.rglob("*")
                      if p.is_file() and p.suffix != ".db" and "workspaces" not in p.relative_to(done.run_dir).parts)
    assert SECRET not in written and TOKEN not in written


def test_variant_picks_whose_settings_harness_keeps(tmp_path: Path) -> None:
    _, project = project_for(tmp_path, GEMINI)
    done = run(project, "--harness", "gemini", "--variant", "second")
    (result,) = done.results()
    assert (result["variant"], result["verdict"]) == ("gemini/default", "passed"), done.output
    (report,) = reports(done, "task", "gemini")
    assert report["env"]["TONE"] == "from-the-second" and "PROFILE_TONE" not in report["env"]


def test_the_variant_flags_set_the_fields_and_harness_keeps_them(tmp_path: Path) -> None:
    standins, project = project_for(tmp_path, CODEX)
    # The stand-ins are reachable in bwrap only through the mount: drop the variant's own mount.
    config = project.path("evals/evals.config.py")
    config.write_text(config.read_text().replace(f"mounts=[{str(standins)!r}]", "mounts=[]"))
    extra = tmp_path / "extra"
    extra.mkdir()
    done = run(project, "--harness", "codex", "--mount", str(standins), "--mount", str(extra),
               "--env", "TONE=from-the-flag", "--secret", "EXTRA_TOKEN", "--profile", "other",
               "--network", env={"EXTRA_TOKEN": TOKEN, "PROJECT_TOKEN": TOKEN})
    (result,) = done.results()
    assert (result["variant"], result["verdict"]) == ("codex/default@other", "passed"), done.output
    (report,) = reports(done, "task", "codex")
    assert report["env"]["TONE"] == "from-the-flag"
    assert report["instructions"] == {".codex/AGENTS.md": "Other rules.\n"}
    (snapshot,) = done.run_json()["variants"]
    assert snapshot["network"] is True and snapshot["profile"] == "other"
    assert snapshot["mounts"] == [str(standins), str(extra)]
    assert "EXTRA_TOKEN" in snapshot["secrets"] and "CODEX_API_KEY" in snapshot["secrets"]
    assert json.dumps(done.run_json()).count(TOKEN) == 0


def test_bad_variant_flags_are_one_line_errors(tmp_path: Path) -> None:
    _, project = project_for(tmp_path, CODEX)
    cases = [
        (("--env", "NOEQUALS"), "argument --env: expected NAME=VALUE, got 'NOEQUALS'"),
        (("--secret", "not a name"), "argument --secret: expected an environment variable name"),
        (("--secret", "UNSET_TOKEN_XYZ"), "--secret UNSET_TOKEN_XYZ: UNSET_TOKEN_XYZ is not set in anpord's environment"),
        (("--mount", str(tmp_path / "nope")), f"{tmp_path / 'nope'} does not exist"),
        (("--profile", "missing"), "--profile missing: profile 'missing' not found"),
    ]
    for args, message in cases:
        done = project.run(*args)
        assert done.code == 2, (args, done.output)
        assert message in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_harness_on_the_same_cli_keeps_its_model_and_options(tmp_path: Path) -> None:
    standins, project = project_for(tmp_path, "replay:claude-code/recorded__canned-model__bash-exit-codes.jsonl")
    config = project.path("evals/evals.config.py")
    config.write_text(config.read_text().replace("Variant(harness='claude', model=None", "Variant(harness='claude', model='claude-x'"))
    done = run(project, "--harness", f"claude:{standins}/claude", env={"PROJECT_TOKEN": TOKEN})
    (result,) = done.results()
    assert result["variant"] == f"claude:{standins}/claude/claude-x@house", done.output
    (report,) = reports(done, "task", "claude")
    # The variant's system_prompt option still reaches Claude Code, after the profile's.
    argv = report["argv"]
    assert argv[argv.index("--append-system-prompt") + 1] == "House rules.\n\n\nVariant says hi."
    assert report["model"] == "claude-x"
