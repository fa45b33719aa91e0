"""The coding-agents example (two CLIs on one repository task): its structure lists, its profile
loads, its harnesses resolve, and its verifiers tell a fixed repository from the broken one. The
real CLIs are not run here (they need their keys and network): a command agent that applies a
known fix, or none, stands in for them."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
from project_support import Project

from anpord.harnesses import load_profile, resolve_harness

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "coding_agents"
FIX = '''
    """URL slugs from titles."""

    import re
    import unicodedata


    def slugify(title: str, max_length: int = 60) -> str:
        ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
        words = [w for w in re.split(r"[^a-z0-9]+", ascii_title.lower()) if w]
        return "-".join(words)[:max_length].rstrip("-")
'''


@pytest.fixture
def example(tmp_path: Path) -> Project:
    copy = tmp_path / "coding_agents"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns(".anpord", "__pycache__", ".pytest_cache"))
    (tmp_path / "fix.py").write_text(textwrap.dedent(FIX).lstrip())
    return Project(copy)


def test_the_example_lists_its_case_and_resolves_its_harnesses(example: Project) -> None:
    listed = example.run("--list", "--json")
    assert listed.code == 0, listed.output
    assert [c["id"] for c in json.loads(listed.stdout)] == ["fix_slugify"]
    for spec in ("claude", "codex"):
        assert resolve_harness(spec, example.folder).spec == spec
    careful = load_profile("careful", example.path("evals/profiles"))
    assert careful.system_prompt and "never edit a test" in careful.system_prompt
    assert careful.files == 3


@pytest.mark.slow
def test_its_verifiers_pass_a_fix_and_fail_the_broken_repository(example: Project, tmp_path: Path) -> None:
    fixed = example.run("--harness", f"command:cp {tmp_path / 'fix.py'} textkit/slug.py", "--sandbox", "local",
                        "--trials", "1", env={"ANTHROPIC_API_KEY": "sk-unused-0000000000"})
    assert fixed.code == 0, fixed.output
    assert fixed.verdicts() == {"fix_slugify": "passed"}
    untouched = example.run("--harness", "command:echo nothing to do", "--sandbox", "local", "--trials", "1",
                            env={"ANTHROPIC_API_KEY": "sk-unused-0000000000"})
    assert untouched.code == 1, untouched.output
    checks = untouched.assertions("fix_slugify")
    assert checks["pytest -q"]["status"] == "failed"
    assert checks["kept_the_tests"]["status"] == "failed"
