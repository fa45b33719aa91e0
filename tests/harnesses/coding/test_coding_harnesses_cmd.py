"""``anpord harnesses``: the CLIs found on PATH and where the evals config points, their versions
(a ``--version`` that hangs is cut off and killed), the sign-in variables each takes, as text and
as JSON."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from e2e_support import install_standins
from proc_support import live_with
from project_support import anpord_command, run_env


def harnesses(cwd: Path, *args: str, path: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = run_env({"PATH": path, **env})
    for name in ("ANTHROPIC_API_KEY", "CODEX_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        full.pop(name, None)
    full.update({k: v for k, v in env.items()})
    return subprocess.run([*anpord_command(), "harnesses", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)


def test_it_lists_installed_and_configured_clis_with_versions_as_json(tmp_path: Path) -> None:
    on_path = install_standins(tmp_path / "bin")
    for name in ("gemini", "opencode"):
        (on_path / name).unlink()
    tools = install_standins(tmp_path / "proj" / "tools")
    (tmp_path / "proj" / "evals").mkdir()
    (tmp_path / "proj" / "evals" / "evals.config.py").write_text(
        "from anpord import Variant, define_eval_config\n"
        "config = define_eval_config(variants=[\n"
        "    Variant(harness='gemini', options={'executable': 'tools/gemini'}),\n"
        "    Variant(harness='opencode:/nowhere/opencode'),\n"
        "])\n"
    )
    done = harnesses(tmp_path / "proj", "--json", path=f"{on_path}:/usr/bin:/bin",
                     ANTHROPIC_API_KEY="sk-test-1234567890")
    assert done.returncode == 0, done.stderr
    found = {d["name"]: d for d in json.loads(done.stdout)["harnesses"]}
    assert [found[n]["installed"] for n in ("claude", "codex", "gemini", "opencode")] == [True, True, True, False]
    assert found["claude"]["copies"] == [
        {"path": f"{on_path}/claude", "source": "PATH", "version": "2.1.197", "error": None}]
    assert found["codex"]["copies"][0]["version"] == "0.171.0"
    assert found["gemini"]["copies"] == [{"path": f"{tools}/gemini", "source": "variant gemini/default",
                                          "version": "0.61.0", "error": None}]
    assert found["opencode"]["missing"] == ["/nowhere/opencode (variant opencode:/nowhere/opencode/default)"]
    assert found["opencode"]["install"] == "npm install -g opencode-ai"
    assert found["claude"]["credentials_set"] == ["ANTHROPIC_API_KEY"]
    assert found["claude"]["secrets_passed"] == ["ANTHROPIC_API_KEY"]  # set: passed undeclared
    assert ["CODEX_API_KEY"] in found["codex"]["credentials"]
    assert found["codex"]["command"].startswith(
        "codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox")
    assert "sk-test-1234567890" not in done.stdout


def test_a_version_that_hangs_is_cut_off_and_the_text_says_what_each_needs(tmp_path: Path) -> None:
    on_path = install_standins(tmp_path / "bin")
    (on_path / "codex").unlink()
    done = harnesses(tmp_path, "--timeout", "1", path=f"{on_path}:/usr/bin:/bin", STANDIN_VERSION_HANGS="1")
    assert done.returncode == 0, done.stderr
    assert live_with(str(on_path)) == []  # the hanging --version runs were killed
    text = done.stdout
    assert f"  version unknown (--version did not answer within 1s) {on_path}/claude  [PATH]" in text
    assert "codex     OpenAI Codex\n  not installed: npm install -g @openai/codex\n" in text
    assert "  declare: Variant(harness='gemini', secrets=['GEMINI_API_KEY'])" in text
    assert text.rstrip().endswith("3 of 4 installed")


def test_the_usage_text_names_the_command() -> None:
    done = subprocess.run([*anpord_command(), "--help"], env=run_env(), capture_output=True, text=True,
                          timeout=60, check=False)
    assert "harnesses                which coding-agent CLIs are installed" in done.stdout
