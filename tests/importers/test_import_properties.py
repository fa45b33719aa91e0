"""Property tests: whatever text a case file holds, it lands in the generated module as an exact
literal or an inert comment, and can never change the code around it."""

from __future__ import annotations

import ast
import io
import json
import tempfile
import tokenize
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from importers_support import load, verdict

from anpord.importers import import_cases
from anpord.importers._model import Converted, ImportedCase, Unwritten, assign_keys
from anpord.importers._text import comment_lines, py_str, slug
from anpord.runner.discovery import slug as runner_slug

# Pieces chosen to break naive code generation: quotes of every kind, escapes, every line break
# Python or str.splitlines knows, NUL and control characters, comment and string openers, bidi
# overrides, a byte-order mark, lone surrogates and an encoding declaration.
NASTY = [
    '"',
    "'",
    '"""',
    "'''",
    "\\",
    "\\n",
    "\n",
    "\r",
    "\r\n",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x1d",
    "\x1e",
    "\x85",
    "\u2028",
    "\u2029",
    "\x00",
    "\x07",
    "\x1b[31m",
    "\t",
    "#",
    "/*",
    "*/",
    "`",
    "${x}",
    "{",
    "}",
    "$",
    "\u202e",
    "\ufeff",
    "\ud800",
    "\udfff",
    "\U0001f600",
    "é",
    "中文",
    "# -*- coding: latin-1 -*-",
    "coding=utf-16",
    ")",
    "])",
    "),\n",
    "\n_cases.append(",
    "\\\n",
    "import os; os.system('x')",
    " ",
    "  ",
]
ANY_CHAR = st.characters(exclude_categories=())  # surrogates included
text = st.lists(st.one_of(st.sampled_from(NASTY), st.text(ANY_CHAR, max_size=8)), max_size=6).map(
    "".join
)
nonempty = text.filter(bool)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


@SETTINGS
@given(text)
def test_literal_is_exact_and_on_one_printable_line(value: str) -> None:
    literal = py_str(value)
    assert ast.literal_eval(literal) == value
    assert literal.isprintable()
    assert not any(ch in literal for ch in BREAKS)
    tree = ast.parse(f"x = {literal}\n")
    assert len(tree.body) == 1


@SETTINGS
@given(text)
def test_keys_are_what_the_runner_would_make_them(value: str) -> None:
    key = slug(value)
    assert runner_slug(value) == key or runner_slug(runner_slug(value)) == key
    assert runner_slug(key) == key
    assert runner_slug(f"{key}-2") == f"{key}-2" or not key


@SETTINGS
@given(text, st.sampled_from(["", "    ", " " * 12]))
def test_comment_lines_are_inert(value: str, indent: str) -> None:
    lines = comment_lines(value, indent)
    assert lines and all(line.startswith(indent + "#") for line in lines)
    assert all(len(line.splitlines()) == 1 and line.isprintable() for line in lines)
    source = "\n".join(["x = [", *lines, "]", *lines, "y = 1"]) + "\n"
    tree = ast.parse(source)
    assert [type(node).__name__ for node in tree.body] == ["Assign", "Assign"]
    kinds = {
        tok.type for tok in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline)
    }
    assert kinds <= {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER}


# -- whole evals-json files ----------------------------------------------------------------------

structured = st.fixed_dictionaries(
    {
        "text": text,
        "kind": st.sampled_from(
            ["content_contains_any", "content_contains_all", "content_contains_none"]
        ),
        "needles": st.lists(nonempty, min_size=1, max_size=3),
    }
)
assertion = st.one_of(text, structured)
case = st.fixed_dictionaries(
    {
        "id": st.one_of(st.integers(-5, 10**12), text),
        "prompt": text,
        "assertions": st.lists(assertion, max_size=4),
    },
    optional={
        "name": text,
        "eval_name": text,
        "expected_output": text,
        "files": st.lists(text, max_size=3),
        "expectations": st.lists(text, max_size=2),
    },
)
evals_file = st.fixed_dictionaries(
    {"evals": st.lists(case, min_size=1, max_size=5)}, optional={"skill_name": text}
)

_RULES = {
    "content_contains_any": "any",
    "content_contains_all": "all",
    "content_contains_none": "none",
}
_WORDS = {"any": "at least one of", "all": "all of", "none": "none of"}
_HELPERS = {"_contains_any", "_contains_all", "_contains_none"}


def _expected_checks(raw: dict[str, Any]) -> list[Converted | Unwritten]:
    checks: list[Converted | Unwritten] = []
    for item in raw["assertions"] + raw.get("expectations", []):
        if isinstance(item, str):
            checks.append(Unwritten(item))
        else:
            checks.append(Converted(_RULES[item["kind"]], item["text"], tuple(item["needles"])))
    if not raw["assertions"] and not raw.get("expectations"):
        checks.append(Unwritten("This case named no assertion. Write what a good answer is."))
    return checks


def _expected_message(check: Converted | Unwritten, answer: str) -> str | None:
    if isinstance(check, Unwritten):
        return f'unwritten check: "{check.text}"'
    folded = answer.casefold()
    found = [needle.casefold() in folded for needle in check.needles]
    held = {"any": any(found), "all": all(found), "none": not any(found)}[check.rule]
    if held:
        return None
    needles = ", ".join(f'"{needle}"' for needle in check.needles)
    return f'"{check.text}": the answer must include {_WORDS[check.rule]} {needles}'


def _shape(source: str) -> str:
    """The module's code with every constant blanked: what is left is structure only."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    return ast.dump(tree)


def _import_json(data: dict[str, Any]) -> Any:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "evals.json"
        path.write_text(json.dumps(data), encoding="utf-8")  # ASCII: surrogates as \\ud800
        return import_cases("evals-json", str(path))


@pytest.mark.slow
@SETTINGS
@given(evals_file, text)
def test_any_evals_json_file_becomes_a_module_holding_it_exactly(
    data: dict[str, Any], answer: str
) -> None:
    data = json.loads(json.dumps(data))  # what the file holds: JSON pairs up escaped surrogates
    imported = _import_json(data)
    source = imported.source
    source.encode("utf-8")  # writable as UTF-8: nothing unpaired slipped into code or comments
    namespace = load(source)
    suite = namespace["suite"]
    raws = data["evals"]
    assert len(suite.cases) == len(raws)

    own_ids = [str(raw["id"]) for raw in raws]
    keys, _ = assign_keys(
        tuple(ImportedCase(own_id=i, name=None, prompt="", checks=()) for i in own_ids)
    )
    assert [c.id for c in suite.cases] == keys
    assert len(set(keys)) == len(keys)
    assert all(key and runner_slug(key) == key for key in keys)  # the runner keeps it as is

    for built, raw in zip(suite.cases, raws):
        assert built.prompt == raw["prompt"]
        assert built.name == raw.get("name", raw.get("eval_name"))

    # The code holds exactly the calls the file asks for, with the file's exact values.
    expected = [check for raw in raws for check in _expected_checks(raw)]
    tree = ast.parse(source)
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _HELPERS | {"_unwritten", "define_eval"}
        and node.lineno > _prelude_end(source)
    ]
    found.sort(key=lambda node: (node.lineno, node.col_offset))
    checks = [node for node in found if node.func.id != "define_eval"]  # type: ignore[attr-defined]
    assert sum(node.func.id == "define_eval" for node in found) == len(raws)  # type: ignore[attr-defined]
    assert len(checks) == len(expected)
    for node, want in zip(checks, expected):
        args = [ast.literal_eval(arg) for arg in node.args]
        if isinstance(want, Unwritten):
            assert node.func.id == "_unwritten" and args == [want.text]  # type: ignore[attr-defined]
        else:
            assert args == [want.text, list(want.needles)]

    # And they behave as the file says.
    for built, raw in zip(suite.cases, raws):
        messages = [m for m in (_expected_message(c, answer) for c in _expected_checks(raw)) if m]
        passed, message = verdict(built, answer)
        assert passed is (not messages)
        if messages:
            assert message == said("; ".join(messages), answer)


def said(message: str, answer: str) -> str:
    """The generated failure message: the checks that did not hold, then the answer."""
    shown = answer if len(answer) <= 200 else answer[:199] + "…"
    return f"{message} — the answer was {shown!r}"


def _prelude_end(source: str) -> int:
    return source.splitlines().index("_cases: list[Any] = []") + 1


@pytest.mark.slow
@SETTINGS
@given(evals_file)
def test_comment_only_text_cannot_change_the_code(data: dict[str, Any]) -> None:
    # expected_output, files and skill_name reach the module only as comments: blanking them
    # must leave the code (its AST) exactly as it was.
    plain = json.loads(json.dumps(data))
    plain["skill_name"] = "x"
    for raw in plain["evals"]:
        raw["expected_output"] = "x"
        raw["files"] = ["x"]
    mixed = json.loads(json.dumps(data))
    mixed["skill_name"] = data.get("skill_name", "x")
    for raw, original in zip(mixed["evals"], data["evals"]):
        raw["expected_output"] = original.get("expected_output", "x")
        raw["files"] = original.get("files") or ["x"]
    assert ast.dump(ast.parse(_import_json(mixed).source)) == ast.dump(
        ast.parse(_import_json(plain).source)
    )


@pytest.mark.slow
@SETTINGS
@given(evals_file)
def test_the_code_has_the_same_shape_whatever_the_text(data: dict[str, Any]) -> None:
    # Swap every text for "x" (ids kept so keys match): only constants may differ.
    def blank(raw: dict[str, Any]) -> dict[str, Any]:
        out = {
            key: ("x" if isinstance(value, str) and key != "id" else value)
            for key, value in raw.items()
        }
        out["assertions"] = [
            "x"
            if isinstance(item, str)
            else {**item, "text": "x", "needles": ["x"] * len(item["needles"])}
            for item in raw["assertions"]
        ]
        if "expectations" in raw:
            out["expectations"] = ["x"] * len(raw["expectations"])
        if "files" in raw:
            out["files"] = ["x"] * len(raw["files"])
        return out

    simple = {"evals": [blank(raw) for raw in data["evals"]]}
    if "skill_name" in data:
        simple["skill_name"] = "x"
    assert _shape(_import_json(data).source) == _shape(_import_json(simple).source)


# -- yaml ----------------------------------------------------------------------------------------

yaml_case = st.fixed_dictionaries(
    {"name": text, "task": text},
    optional={"judge_context": st.lists(text, max_size=4), "max_steps": st.integers(0, 10**6)},
)


@SETTINGS
@given(yaml_case, text)
def test_any_yaml_case_becomes_a_module_holding_it_exactly(
    data: dict[str, Any], answer: str
) -> None:
    dumped = yaml.safe_dump(data, allow_unicode=False)
    try:
        assume(yaml.safe_load(dumped) == data)
    except yaml.YAMLError:
        assume(False)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "case.yaml"
        path.write_text(dumped, encoding="utf-8")
        imported = import_cases("yaml", str(path))
    imported.source.encode("utf-8")
    (built,) = load(imported.source)["suite"].cases
    assert built.prompt == data["task"]
    assert built.name == data["name"]
    assert built.id == (slug(data["name"]) or "case")
    lines = data.get("judge_context") or [
        "This case named no judge context. Write what a good answer is."
    ]
    assert verdict(built, answer) == (
        False,
        said("; ".join(f'unwritten check: "{line}"' for line in lines), answer),
    )
