"""Values a case file may hold that JSON or plain strings do not: lists where a string belongs,
YAML dates, binary, sets and keys that are not strings, values that contain themselves, numbers
too long to print, NaN, alias bombs. Each imports cleanly or is refused with one line naming
where it is; none escapes as an exception."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from importers_support import SRC, anpord_command, load, run_anpord

from anpord.importers import (
    CaseFileNotEvalsJson,
    CaseFileNotYaml,
    CaseFileNotYamlCase,
    ImportedSuite,
    ImportRefusal,
    import_cases,
)

KINDS = '"content_contains_any" | "content_contains_all" | "content_contains_none"'


def imported(tmp_path: Path, fmt: str, text: str, name: str | None = None) -> ImportedSuite:
    path = tmp_path / (name or ("evals.json" if fmt == "evals-json" else "case.yaml"))
    path.write_text(text, encoding="utf-8")
    suite = import_cases(fmt, str(path))
    load(suite.source)  # it compiles and runs
    return suite


def refused(tmp_path: Path, fmt: str, text: str, name: str | None = None) -> ImportRefusal:
    path = tmp_path / (name or ("evals.json" if fmt == "evals-json" else "case.yaml"))
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ImportRefusal) as caught:
        import_cases(fmt, str(path))
    assert "\n" not in caught.value.line()
    return caught.value


def evals(*cases: dict[str, Any]) -> str:
    return json.dumps({"evals": list(cases)})


def case(**fields: Any) -> dict[str, Any]:
    return {"id": 1, "prompt": "Say hi.", "assertions": ["It says hi."], **fields}


def kept(source: str, field: str) -> str:
    """The comment that keeps a field the format does not define."""
    prefix = f"# Not imported, from the file: {field} = "
    (line,) = [line for line in source.splitlines() if line.startswith(prefix)]
    return line[len(prefix) :]


# -- a kind that is not a string ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "shown"),
    [
        ([], "[]"),
        ({}, "{}"),
        (["content_contains_all"], '["content_contains_all"]'),
        (3, "3"),
        (None, "null"),
    ],
)
def test_a_kind_that_is_not_a_string_is_refused_by_field(
    tmp_path: Path, kind: object, shown: str
) -> None:
    assertion = {"text": "names it", "kind": kind, "needles": ["x"]}
    refusal = refused(tmp_path, "evals-json", evals(case(assertions=[assertion])))
    assert type(refusal) is CaseFileNotEvalsJson
    assert refusal.reason == f"case 1, assertions.0.kind: Expected {KINDS}, actual {shown}"


def test_other_fields_of_the_wrong_type_are_refused_by_field(tmp_path: Path) -> None:
    bad = case(
        id={"n": 1},
        name=[1],
        files=[{"dir": "x"}],
        assertions=[
            {"name": ["label"], "text": ["prose"]},
            {"kind": "content_contains_any", "text": {}, "needles": [[]]},
        ],
    )
    refusal = refused(tmp_path, "evals-json", evals(bad))
    assert type(refusal) is CaseFileNotEvalsJson
    assert refusal.reason.startswith(
        'case at index 0, id: Expected integer or string, actual {"n": 1}'
    )
    assert refusal.reason.endswith("more")


# -- YAML values JSON has no spelling for ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field", "comment"),
    [
        ("extra: {2024-01-01: kept}\n", "extra", '{"2024-01-01": "kept"}'),
        ("extra: {? !!binary aGVsbG8= : kept}\n", "extra", '{"b\'hello\'": "kept"}'),
        ("extra: &loop [1, *loop]\n", "extra", "[1, [...]]"),
        ("extra: &loop {self: *loop}\n", "extra", '{"self": {...}}'),
        ("extra: !!set {b, a, c}\n", "extra", '["a", "b", "c"]'),
        ("extra: 2001-12-14t21:59:43.10-05:00\n", "extra", '"2001-12-14 21:59:43.100000-05:00"'),
        ("extra: !!binary aGVsbG8=\n", "extra", "\"b'hello'\""),
        ("extra: [.nan, .inf, -.inf, ~, yes]\n", "extra", "[NaN, Infinity, -Infinity, null, true]"),
        ("2024-01-01: a date key\n", "2024-01-01", '"a date key"'),
        ("? !!binary aGVsbG8=\n: a binary key\n", "b'hello'", '"a binary key"'),
        ("7: an int key\n", "7", '"an int key"'),
        ("~: a null key\n", "None", '"a null key"'),
        ("true: a bool key\n", "True", '"a bool key"'),
    ],
)
def test_yaml_fields_json_cannot_spell_import_as_comments(
    tmp_path: Path, text: str, field: str, comment: str
) -> None:
    suite = imported(tmp_path, "yaml", "name: A\ntask: Say hi\n" + text)
    assert kept(suite.source, field) == comment
    (note,) = [n for n in suite.notes if n.startswith("Not imported:")]
    assert (
        note
        == f"Not imported: {json.dumps(field)} ({tmp_path / 'case.yaml'}) is not a yaml case field."
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("name: A\ntask: &loop [*loop]\n", "task: Expected string, actual [[...]]"),
        ("name: A\ntask: {2024-01-01: 1}\n", 'task: Expected string, actual {"2024-01-01": 1}'),
        ("name: A\ntask: !!set {a}\n", 'task: Expected string, actual ["a"]'),
        ("name: !!binary aGVsbG8=\ntask: t\n", "name: Expected string, actual b'hello' (a bytes)"),
    ],
)
def test_yaml_known_fields_holding_such_values_are_refused_by_field(
    tmp_path: Path, text: str, reason: str
) -> None:
    refusal = refused(tmp_path, "yaml", text)
    assert type(refusal) is CaseFileNotYamlCase
    assert refusal.reason == reason


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("!!int abc", 'could not read "abc" as int (line 3, column 8)'),
        ("!!float abc", 'could not read "abc" as float (line 3, column 8)'),
        ("!!bool maybe", 'could not read "maybe" as bool (line 3, column 8)'),
        ("!!timestamp 2024-99-99", 'could not read "2024-99-99" as timestamp (line 3, column 8)'),
        ("!!timestamp noon", 'could not read "noon" as timestamp (line 3, column 8)'),
        ("2024-02-30", 'could not read "2024-02-30" as timestamp (line 3, column 8)'),
        ("!!int ''", 'could not read "" as int (line 3, column 8)'),
    ],
)
def test_scalars_their_tag_cannot_read_are_not_yaml_with_a_position(
    tmp_path: Path, value: str, reason: str
) -> None:
    refusal = refused(tmp_path, "yaml", f"name: A\ntask: t\nextra: {value}\n")
    assert type(refusal) is CaseFileNotYaml
    assert refusal.reason == reason


@pytest.mark.parametrize(
    "value",
    [
        "!!python/object:os.system x",
        "!!python/object/apply:os.system ['true']",
        "!!python/name:os.system",
        "!!python/tuple [1, 2]",
        "!!python/bytes aGk=",
    ],
)
def test_python_tags_are_never_constructed(tmp_path: Path, value: str) -> None:
    refusal = refused(tmp_path, "yaml", f"name: A\ntask: t\nextra: {value}\n")
    assert type(refusal) is CaseFileNotYaml
    assert refusal.reason.startswith("could not determine a constructor for the tag")


# -- numbers longer than Python prints ------------------------------------------------------------

LONG = "9" * 5000


def test_a_long_json_id_is_refused_by_field(tmp_path: Path) -> None:
    refusal = refused(tmp_path, "evals-json", f'{{"evals": [{{"id": {LONG}, "prompt": "p"}}]}}')
    assert type(refusal) is CaseFileNotEvalsJson
    assert refusal.reason == (
        "case at index 0, id: Expected an integer of at most 4,300 digits, or a string, "
        "actual a number of 5,000 digits"
    )


def test_an_id_of_exactly_the_limit_imports(tmp_path: Path) -> None:
    suite = imported(
        tmp_path, "evals-json", f'{{"evals": [{{"id": {"7" * 4300}, "prompt": "p"}}]}}'
    )
    assert load(suite.source)["suite"].cases[0].id == "7" * 4300


def test_a_lower_interpreter_limit_is_the_limit(tmp_path: Path) -> None:
    # PYTHONINTMAXSTRDIGITS=640 makes int() refuse 1,000 digits: that must be a refusal too.
    (tmp_path / "evals.json").write_text(f'{{"evals": [{{"id": {"8" * 1000}, "prompt": "p"}}]}}')
    (tmp_path / "case.yaml").write_text(f"name: A\ntask: t\nmax_steps: 0x{'f' * 900}\n")
    for fmt, path, refusal in (
        ("evals-json", "evals.json", "id: Expected an integer of at most 640 digits, or a string"),
        ("yaml", "case.yaml", "max_steps: Expected an integer of at most 640 digits"),
    ):
        done = subprocess.run(
            [*anpord_command(), "eval", "import", "--format", fmt, path],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONINTMAXSTRDIGITS": "640", "PYTHONPATH": str(SRC)},
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert refusal in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            f'{{"evals": [{{"id": 1, "prompt": -{LONG}}}]}}',
            "case 1, prompt: Expected string, actual a number of 5,000 digits",
        ),
        (
            f'{{"skill_name": {LONG}, "evals": []}}',
            "skill_name: Expected string, actual a number of 5,000 digits",
        ),
        (
            f'{{"evals": [{{"id": 1, "prompt": "p", "assertions": [{{"kind": "content_contains_any", "text": "t", "needles": [{LONG}]}}]}}]}}',
            "case 1, assertions.0.needles.0: Expected a non-empty string, actual a number of 5,000 digits",
        ),
    ],
)
def test_long_json_numbers_where_text_belongs_are_refused_by_field(
    tmp_path: Path, text: str, reason: str
) -> None:
    refusal = refused(tmp_path, "evals-json", text)
    assert type(refusal) is CaseFileNotEvalsJson
    assert refusal.reason == reason


def test_a_long_top_level_json_number_is_not_an_evals_json_file(tmp_path: Path) -> None:
    refusal = refused(tmp_path, "evals-json", LONG)
    assert type(refusal) is CaseFileNotEvalsJson
    assert refusal.reason.startswith("the top level is a number of 5,000 digits; expected")


def test_a_long_json_number_in_an_unknown_field_is_kept_cut(tmp_path: Path) -> None:
    suite = imported(
        tmp_path, "evals-json", f'{{"evals": [{{"id": 1, "prompt": "p", "weight": {LONG}}}]}}'
    )
    assert kept(suite.source, "weight") == "9" * 499 + "…"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (LONG, "5,000"),
        ("-" + LONG, "5,000"),
        ("0x" + "f" * 4000, "4,000"),
        ("1_" * 5000 + "1", "5,001"),
    ],
    ids=["decimal", "negative", "hex", "underscores"],
)
def test_long_yaml_max_steps_is_refused_by_field(tmp_path: Path, value: str, shown: str) -> None:
    refusal = refused(tmp_path, "yaml", f"name: A\ntask: t\nmax_steps: {value}\n")
    assert type(refusal) is CaseFileNotYamlCase
    assert refusal.reason == (
        f"max_steps: Expected an integer of at most 4,300 digits, actual a number of {shown} digits"
    )


@pytest.mark.parametrize(
    "value",
    [LONG, "0x" + "f" * 4000, "0b" + "1" * 20000, "1" + ":30" * 3000],
    ids=["decimal", "hex", "binary", "sexagesimal"],
)
def test_long_yaml_numbers_in_unknown_fields_import(tmp_path: Path, value: str) -> None:
    suite = imported(tmp_path, "yaml", f"name: A\ntask: t\nextra: [{value}]\n")
    comment = kept(suite.source, "extra")
    assert comment.startswith("[") and comment.endswith("…") and len(comment) == 500


# -- NaN, Infinity and deep nesting in JSON -------------------------------------------------------


def test_json_nan_and_infinity_are_kept_as_written(tmp_path: Path) -> None:
    text = '{"evals": [{"id": 1, "prompt": "p", "scores": [NaN, Infinity, -Infinity, 1e999]}]}'
    assert kept(imported(tmp_path, "evals-json", text).source, "scores") == (
        "[NaN, Infinity, -Infinity, Infinity]"
    )


def test_a_nan_id_is_refused_by_field(tmp_path: Path) -> None:
    refusal = refused(tmp_path, "evals-json", '{"evals": [{"id": NaN, "prompt": "p"}]}')
    assert refusal.reason == "case at index 0, id: Expected integer or string, actual NaN"


def test_json_nested_as_deep_as_the_parser_reads_imports(tmp_path: Path) -> None:
    deep = "[" * 900 + "]" * 900
    suite = imported(
        tmp_path, "evals-json", f'{{"evals": [{{"id": 1, "prompt": "p", "x": {deep}}}]}}'
    )
    assert kept(suite.source, "x") == "[" * 499 + "…"


# -- alias bombs ----------------------------------------------------------------------------------


def alias_bomb(under: str) -> str:
    """A "billion laughs": nine levels of nine aliases each, 9**9 strings from a few hundred bytes."""
    lines = ['  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for before, level in zip("abcdefgh", "bcdefghi"):
        lines.append(f"  {level}: &{level} [" + ",".join([f"*{before}"] * 9) + "]")
    return f"name: Laughs\ntask: Say hi\n{under}:\n" + "\n".join(lines) + "\n"


# Far below what expanding a bomb takes (its text alone is about 4 GB), far above an import.
MEMORY_LIMIT = 1 << 30


def test_an_alias_bomb_under_an_unknown_field_imports_in_bounded_memory(tmp_path: Path) -> None:
    text = alias_bomb("payload")
    assert len(text.encode()) < 600
    (tmp_path / "laughs.yaml").write_text(text)
    done = run_anpord(
        "eval",
        "import",
        "--format",
        "yaml",
        "laughs.yaml",
        "--out",
        "laughs.eval.py",
        cwd=tmp_path,
        memory_limit=MEMORY_LIMIT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    source = (tmp_path / "laughs.eval.py").read_text(encoding="utf-8")
    load(source)
    comment = kept(source, "payload")
    assert comment.startswith('{"a": ["lol", "lol"') and comment.endswith("…")
    assert len(comment) == 500
    assert len(source) < 10_000


def test_an_alias_bomb_in_a_known_field_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    (tmp_path / "laughs.yaml").write_text(alias_bomb("payload") + "judge_context: *i\n")
    done = run_anpord(
        "eval", "import", "--format", "yaml", "laughs.yaml", cwd=tmp_path, memory_limit=MEMORY_LIMIT
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stdout == ""
    assert done.stderr.startswith(
        "CaseFileNotYamlCase: laughs.yaml is not a yaml case: "
        "judge_context.0: Expected string, actual [[[[[[[["
    )
    assert done.stderr.count("\n") == 1 and len(done.stderr) < 600


def test_a_merge_key_bomb_is_refused(tmp_path: Path) -> None:
    # Each level merges the one before nine times; PyYAML copies every merged entry, so nine
    # levels would copy 9**9 * 2 of them for a two-key mapping.
    lines = ["name: A", "task: B", "x:", "  l0: &l0 {a: 1, b: 2}"]
    for level in range(1, 9):
        lines.append(f"  l{level}: &l{level} {{<<: [" + ", ".join([f"*l{level - 1}"] * 9) + "]}")
    refusal = refused(tmp_path, "yaml", "\n".join(lines) + "\n")
    assert type(refusal) is CaseFileNotYaml
    assert refusal.reason == (
        "while constructing a mapping, its merge keys (<<) copy more than 100,000 entries "
        "(line 8, column 7)"
    )


def test_ordinary_merge_keys_still_merge(tmp_path: Path) -> None:
    text = "base: &base {name: From base, task: Shared task}\n<<: *base\nname: Own name\n"
    (built,) = load(imported(tmp_path, "yaml", text).source)["suite"].cases
    assert (built.name, built.prompt) == ("Own name", "Shared task")


# -- ids that slug alike --------------------------------------------------------------------------


def ids_of(tmp_path: Path, *ids: object) -> list[str]:
    suite = imported(tmp_path, "evals-json", evals(*(case(id=i) for i in ids)))
    return [built.id for built in load(suite.source)["suite"].cases]


def test_a_negative_id_does_not_collide_with_its_positive_twin(tmp_path: Path) -> None:
    assert ids_of(tmp_path, -5, 5) == ["minus-5", "5"]
    assert ids_of(tmp_path, 5, -5) == ["5", "minus-5"]  # stable whatever the order
    assert ids_of(tmp_path, "-5", 5, -12, " -0") == ["minus-5", "5", "minus-12", "minus-0"]


def test_ids_that_still_collide_are_numbered_and_said(tmp_path: Path) -> None:
    suite = imported(tmp_path, "evals-json", evals(case(id=-5), case(id="minus-5")))
    assert [built.id for built in load(suite.source)["suite"].cases] == ["minus-5", "minus-5-2"]
    assert 'have the id "minus-5"' in " ".join(suite.notes)
