"""--format dataset: JSONL, JSON or CSV rows of an input and an expected answer; the columns
found by name or given by flag; --match choosing the check, a placeholder by default."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from importers_support import load, verdict

from anpord.importers import (
    CaseFileEmpty,
    CaseFileIsLfsPointer,
    CaseFileNotDataset,
    ImportRefusal,
    import_cases,
)


def _imported(path: Path, **options: str) -> tuple[Any, list[Any]]:
    suite = import_cases("dataset", str(path), **options)
    return suite, load(suite.source)["_cases"]


def _jsonl(tmp_path: Path, rows: list[dict[str, Any]], name: str = "d.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return path


ROWS = [{"question": "2+2?", "answer": 4, "id": "sum"}, {"question": "Capital?", "answer": "Paris"}]


def test_default_is_a_failing_placeholder_naming_the_expected_value(tmp_path: Path) -> None:
    suite, (first, second) = _imported(_jsonl(tmp_path, ROWS))
    assert suite.tally.needs_author == 2
    assert first.id == "sum" and first.prompt == "2+2?"
    assert second.id == "row-2"
    assert 'The dataset expects \\"4\\"' in suite.source or 'expects "4"' in suite.source
    assert verdict(second, "Paris")[0] is False


def test_match_equals_trims_white_space(tmp_path: Path) -> None:
    suite, (first, second) = _imported(_jsonl(tmp_path, ROWS), match="equals")
    assert suite.tally.converted == 2 and suite.tally.needs_author == 0
    assert verdict(first, " 4\n")[0] and not verdict(first, "44")[0]
    assert not verdict(second, "paris")[0]


def test_match_includes_ignores_case(tmp_path: Path) -> None:
    _, (_, second) = _imported(_jsonl(tmp_path, ROWS), match="includes")
    assert verdict(second, "It is PARIS.")[0] and not verdict(second, "Lyon")[0]


def test_match_judge(tmp_path: Path) -> None:
    suite, (_, second) = _imported(_jsonl(tmp_path, ROWS), match="judge")
    (spec,) = second.judges
    assert spec.rubric.endswith("Paris")
    assert suite.tally.converted == 2


def test_target_list_and_chat_input(tmp_path: Path) -> None:
    rows = [{"input": [{"role": "user", "content": "Hi?"}], "target": ["Hello", "Hey"]}]
    _, (case,) = _imported(_jsonl(tmp_path, rows), match="equals")
    assert case.prompt == "Hi?"
    assert verdict(case, "Hey")[0] and not verdict(case, "Yo")[0]


def test_columns_by_flag(tmp_path: Path) -> None:
    rows = [{"q": "a", "gold": "b", "input": "decoy"}]
    _, (case,) = _imported(
        _jsonl(tmp_path, rows), input_column="q", expected_column="gold", match="equals"
    )
    assert case.prompt == "a" and verdict(case, "b")[0]


def test_csv_with_bom_crlf_and_multiline_cells(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_bytes(
        '\ufeffQuestion,Answer\r\n"東京は\r\nどこ？",日本\r\n"say ""hi""",hi\r\n'.encode()
    )
    _, (first, second) = _imported(path, match="includes")
    assert first.prompt == "東京は\r\nどこ？"
    assert verdict(first, "日本です")[0]
    assert second.prompt == 'say "hi"'


def test_json_array_of_rows(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps([{"prompt": "p", "expected": "e"}]))
    _, (case,) = _imported(path, match="equals")
    assert case.prompt == "p" and verdict(case, "e")[0]


REFUSALS: list[tuple[str, str, dict[str, str], type[ImportRefusal], str]] = [
    ("d.jsonl", '{"a": 1, "b": 2}\n', {}, CaseFileNotDataset, "no input column among a, b"),
    ("d.jsonl", '{"input": "x"}\n', {}, CaseFileNotDataset, "no expected column"),
    (
        "d.jsonl",
        '{"input": "x", "target": "y"}\n',
        {"input_column": "q"},
        CaseFileNotDataset,
        "--input-column q: no such column",
    ),
    (
        "d.jsonl",
        '{"input": "x", "target": "y"}\nnope\n',
        {},
        CaseFileNotDataset,
        "line 2 is not JSON",
    ),
    (
        "d.jsonl",
        '{"input": {"a": 1}, "target": "y"}\n',
        {},
        CaseFileNotDataset,
        "row 1, input: Expected a string",
    ),
    ("d.jsonl", "[1, 2]\n", {}, CaseFileNotDataset, "row 1: Expected an object"),
    (
        "d.csv",
        "input,target\na,b,c\n",
        {},
        CaseFileNotDataset,
        "line 2: 3 cells under 2 column names",
    ),
    ("d.csv", "input,target\n", {}, CaseFileEmpty, ""),
    ("d.jsonl", "", {}, CaseFileEmpty, ""),
    (
        "d.jsonl",
        "version https://git-lfs.github.com/spec/v1\noid sha256:aa\nsize 3\n",
        {},
        CaseFileIsLfsPointer,
        "",
    ),
]


@pytest.mark.parametrize(("name", "text", "options", "refusal", "says"), REFUSALS)
def test_refusals_are_one_line(
    tmp_path: Path,
    name: str,
    text: str,
    options: dict[str, str],
    refusal: type[ImportRefusal],
    says: str,
) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(refusal) as caught:
        import_cases("dataset", str(tmp_path / name), **options)
    line = caught.value.line()
    assert "\n" not in line and says in line


def test_not_utf8_is_refused(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_bytes(b"input,target\n\xff\xfe\xfa,b\n")
    with pytest.raises(CaseFileNotDataset, match="not UTF-8 text"):
        import_cases("dataset", str(tmp_path / "d.csv"))


@pytest.mark.parametrize(
    "line",
    [
        '  {"a": 1}\t',
        '{"a": 1} x',
        '{"a": 1}{"b": 2}',
        '{"a": ',
        "\u00a0{}",
        "{}\u00a0",
        '"text"',
        "123456789012345678901234567890",
        "[1, 2",
        "nul",
    ],
)
def test_jsonl_lines_read_as_json_decode_reads_them(line: str) -> None:
    from anpord.importers._tables import jsonl_values
    from anpord.importers._values import parse_int

    def refuse(path: str, reason: str) -> ImportRefusal:
        return CaseFileNotDataset(path, reason)

    decode = json.JSONDecoder(parse_int=parse_int).decode
    try:
        expected: Any = ("value", repr(decode(line)))
    except json.JSONDecodeError as error:
        expected = ("refused", f"line 1 is not JSON: {error}")
    try:
        got: Any = ("value", repr(next(jsonl_values("d.jsonl", line, refuse))[1]))
    except CaseFileNotDataset as refusal:
        got = ("refused", refusal.reason)
    assert got == expected


def test_without_match_the_import_names_the_flag_that_writes_the_checks(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, ROWS)
    (note,) = import_cases("dataset", str(path)).notes
    assert "import again with --match equals|includes|judge" in note
    assert import_cases("dataset", str(path), match="equals").notes == ()


def test_a_yaml_file_is_refused_naming_the_formats_that_read_yaml(tmp_path: Path) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text("prompts:\n  - 'Say {{ x }}'\ntests:\n  - vars: {x: hi}\n", encoding="utf-8")
    with pytest.raises(CaseFileNotDataset) as refused:
        import_cases("dataset", str(path))
    line = refused.value.line()
    assert "a YAML file" in line and "--format promptfoo" in line and "\\n" not in line
