"""Declarative cases: prompt= + source=files({...}) + validate(context)."""

from __future__ import annotations

from typing import Any

import pytest
from project_support import Project, Run, eval_file

CASES = {
    "full": """
        async def validate(context):
            answer = await context.answer()
            transcript = await context.transcript()
            read = context.tool_calls("read_file")
            checks = [
                answer == "done: result.txt",
                "user: edit" in transcript and "assistant: done: result.txt" in transcript,
                len(context.turns()) == 1 and context.turns()[0].status == "completed",
                isinstance(context.workspace, Path) and (context.workspace / "seed.txt").is_file(),
                context.read_text("result.txt") == "HELLO SEED",
                context.read_text("docs/readme.md") == "# docs",
                context.exists("result.txt") and context.exists("docs/readme.md"),
                not context.exists("missing.txt"),
                [c.name for c in context.tool_calls()] == ["read_file"],
                len(read) == 1 and read[0].input == {"path": "seed.txt"},
                read[0].output == "hello seed" and read[0].status == "completed",
                context.tool_calls("nope") == [],
                [e.type for e in context.events if e.type.startswith("tool.")] == ["tool.called", "tool.result"],
            ]
            failed = [i for i, ok in enumerate(checks) if not ok]
            return not failed, f"checks that failed: {failed}"

        case = define_eval(
            prompt="edit",
            source=files({"seed.txt": "hello seed", "docs/readme.md": "# docs"}),
            validate=validate,
        )
    """,
    "false_with_message": """
        case = define_eval(prompt="echo hi", validate=lambda context: (False, "the answer was wrong"))
    """,
    "returns_text": """
        def validate(context):
            return "yes"

        case = define_eval(prompt="echo hi", validate=validate)
    """,
    "returns_int": """
        case = define_eval(prompt="echo hi", validate=lambda context: 1)
    """,
    "sync_true": """
        def check_answer(context):
            return context.workspace is None and len(context.turns()) == 1

        case = define_eval(prompt="echo hi", validate=check_answer)
    """,
    "async_false": """
        async def validate(context):
            await asyncio.sleep(0)
            return "hi" not in await context.answer()

        case = define_eval(prompt="echo hi", validate=validate)
    """,
    "no_links_out": """
        import os

        OUTSIDE = Path(__file__).resolve().parent.parent / "outside-secret.txt"

        def validate(context):
            os.symlink(OUTSIDE, context.workspace / "link.txt")
            refused = []
            for path in ("link.txt", "../outside-secret.txt", str(OUTSIDE)):
                try:
                    context.read_text(path)
                except Exception as exc:
                    refused.append("outside" in str(exc))
                else:
                    refused.append(False)
            hidden = not context.exists("link.txt") and not context.exists("../outside-secret.txt")
            return all(refused) and hidden, f"refused={refused} hidden={hidden}"

        case = define_eval(prompt="echo hi", source=files({"inside.txt": "ok"}), validate=validate)
    """,
    "read_link_out": """
        import os

        OUTSIDE = Path(__file__).resolve().parent.parent / "outside-secret.txt"

        def validate(context):
            os.symlink(OUTSIDE, context.workspace / "link.txt")
            return context.read_text("link.txt") == "top secret"

        case = define_eval(prompt="echo hi", source=files({}), validate=validate)
    """,
    "suite": """
        def sees_shared(context):
            return context.read_text("shared.txt") == "shared" and context.exists("own.txt") is False

        suite = define_suite(
            cases=[
                define_eval(id="First Case!", prompt="echo one", validate=sees_shared, tags=["first"]),
                define_eval(prompt="echo two", validate=[sees_shared, lambda context: True]),
            ],
            source=files({"shared.txt": "shared"}),
            tags=["suite"],
        )
    """,
}

EXPECTED = {
    "decl/full": "passed",
    "decl/false_with_message": "failed",
    "decl/returns_text": "failed",
    "decl/returns_int": "failed",
    "decl/sync_true": "passed",
    "decl/async_false": "failed",
    "decl/no_links_out": "passed",
    "decl/read_link_out": "failed",
    "decl/suite/first-case": "passed",
    "decl/suite/0001": "passed",
}


@pytest.fixture(scope="module")
def run(make_module_project: Any) -> Run:
    files = {f"evals/decl/{name}.eval.py": eval_file(body) for name, body in CASES.items()}
    files["outside-secret.txt"] = "top secret"
    project = make_module_project(files)
    result = project.run("--max-concurrency", "8")
    assert result.code == 1, result.output
    return result


def test_verdicts(run: Run) -> None:
    got = run.verdicts()
    assert got == EXPECTED, {c: run.result(c)["reason"] for c in got if got[c] != EXPECTED.get(c)}


def test_validate_records_a_gate_with_its_message(run: Run) -> None:
    line = run.result("decl/false_with_message")
    assert line["reason"].endswith("the answer was wrong")
    assert [a["kind"] for a in line["assertions"]] == ["gate"]
    full = run.result("decl/full")["assertions"]
    assert [(a["name"], a["status"]) for a in full] == [("validate", "passed")]
    assert [a["name"] for a in run.result("decl/sync_true")["assertions"]] == ["check_answer"]
    assert len(run.result("decl/suite/0001")["assertions"]) == 2


def test_validate_returning_a_non_bool_names_the_case(run: Run) -> None:
    for case, shown in [("decl/returns_text", "'yes'"), ("decl/returns_int", "1")]:
        line = run.result(case)
        assert case in line["reason"], line["reason"]
        assert "bool" in line["reason"] and shown in line["reason"]
        assert "\n" not in line["reason"]
    assert "Traceback" not in run.stdout + run.stderr


def test_read_text_never_follows_a_link_out(run: Run) -> None:
    line = run.result("decl/read_link_out")
    assert "outside the workspace" in line["reason"]
    assert run.run_dir is not None
    for path in run.run_dir.rglob("*"):
        if path.is_file():
            assert "top secret" not in path.read_text(errors="replace"), path


def test_the_prompt_is_the_first_turn(run: Run) -> None:
    events = run.events("decl/async_false")
    user = [e for e in events if e["type"] == "message.completed" and e["role"] == "user"]
    assert [e["text"] for e in user] == ["echo hi"]


def test_suite_ids_and_tags(run: Run) -> None:
    assert run.run_dir is not None
    listed = Project(run.run_dir.parents[2]).run("decl/suite", "--list", "--json")
    assert listed.code == 0, listed.output
    rows = listed.json()
    assert [r["id"] for r in rows] == ["decl/suite/first-case", "decl/suite/0001"]
    assert rows[0]["tags"] == ["suite", "first"] and rows[1]["tags"] == ["suite"]
    assert all(r["declarative"] for r in rows)
    # Ids do not move when a filter drops a neighbour.
    filtered = Project(run.run_dir.parents[2]).run("decl/suite", "--exclude-tag", "first", "--list", "--json")
    assert [r["id"] for r in filtered.json()] == ["decl/suite/0001"]
