"""Every refusal, by name and full message: a case file the importer is not sure of is refused
with one line and nothing written, never turned into a suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import shutil
from pathlib import Path

import pytest
from importers_support import OWN

from anpord.cli.import_cmd import main
from anpord.importers import (
    CaseDirectoryEmpty,
    CaseDirectoryUnreadable,
    CaseFileEmpty,
    CaseFileNotEvalsJson,
    CaseFileNotJson,
    CaseFileNotYaml,
    CaseFileNotYamlCase,
    CaseFileUnreadable,
    ImportRefusal,
    import_cases,
)

_SHAPE = (
    'expected an object like {"skill_name": "...", "evals": [{"id": 1, "prompt": "...", '
    '"assertions": [...]}]}'
)


def refusal_of(fmt: str, path: str) -> ImportRefusal:
    with pytest.raises(ImportRefusal) as caught:
        import_cases(fmt, path)
    return caught.value


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- the seed's own examples, word for word -------------------------------------------------------


def test_seed_example_names_case_47_by_its_id(tmp_path: Path, monkeypatch, capsys) -> None:
    shutil.copy(OWN / "wrong-shape.json", tmp_path / "evals.json")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "--format", "evals-json", "evals.json")
    assert code == 2
    assert out == ""
    assert err == (
        "CaseFileNotEvalsJson: evals.json is not an evals-json file: "
        "case 47, prompt: Expected string, actual 12\n"
    )


def test_seed_example_stops_a_directory_at_the_bad_file(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    shutil.copy(OWN / "yaml-cases" / "archive-search.yaml", cases / "archive-search.yaml")
    shutil.copy(OWN / "yaml-wrong-shape.yaml", cases / "checkout.yaml")
    shutil.copy(OWN / "yaml-cases" / "build-check.yml", cases / "x-build-check.yml")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "--format", "yaml", "cases", "--out", "browsing.eval.py")
    assert code == 2
    assert out == ""
    assert err == (
        "CaseFileNotYamlCase: cases/checkout.yaml is not a yaml case: "
        "task: Expected string, actual 12\n"
    )
    assert not (tmp_path / "browsing.eval.py").exists()


# -- each refusal on the project's fixtures -------------------------------------------------------

FIXTURE_REFUSALS = [
    (
        "evals-json",
        "wrong-shape.json",
        CaseFileNotEvalsJson,
        "wrong-shape.json is not an evals-json file: case 47, prompt: Expected string, actual 12",
    ),
    (
        "evals-json",
        "no-cases.json",
        CaseFileEmpty,
        "no-cases.json declares no cases, so there is nothing to import",
    ),
    (
        "evals-json",
        "not-json.json",
        CaseFileNotJson,
        "not-json.json is not JSON: Expecting value: line 2 column 1 (char 37)",
    ),
    (
        "evals-json",
        "missing.json",
        CaseFileUnreadable,
        "Could not read missing.json: No such file or directory",
    ),
    (
        "evals-json",
        "yaml-cases",
        CaseFileUnreadable,
        "Could not read yaml-cases: Is a directory",
    ),
    (
        "yaml",
        "yaml-malformed.yaml",
        CaseFileNotYaml,
        (
            "yaml-malformed.yaml is not YAML: while scanning a quoted scalar, "
            "found unexpected end of stream (line 6, column 1)"
        ),
    ),
    (
        "yaml",
        "yaml-wrong-shape.yaml",
        CaseFileNotYamlCase,
        "yaml-wrong-shape.yaml is not a yaml case: task: Expected string, actual 12",
    ),
    (
        "yaml",
        "yaml-none",
        CaseDirectoryEmpty,
        "yaml-none holds no .yaml or .yml files, so there is nothing to import",
    ),
    (
        "yaml",
        "missing-folder/",
        CaseFileUnreadable,
        "Could not read missing-folder/: No such file or directory",
    ),
]


@pytest.mark.parametrize(("fmt", "path", "kind", "message"), FIXTURE_REFUSALS)
def test_fixture_refusals(own: Path, capsys, fmt: str, path: str, kind: type, message: str) -> None:
    refusal = refusal_of(fmt, path)
    assert type(refusal) is kind
    assert refusal.message == message

    code, out, err = cli(capsys, "--format", fmt, path, "--out", "suite.eval.py")
    assert code == 2
    assert out == ""
    assert err == f"{kind.__name__}: {message}\n"
    assert not (own / "suite.eval.py").exists()
    assert not [p for p in own.iterdir() if p.name.endswith(".tmp")]


def test_refusal_without_out_prints_no_suite(own: Path, capsys) -> None:
    code, out, err = cli(capsys, "--format", "evals-json", "wrong-shape.json")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1


def test_a_directory_that_cannot_be_listed(tmp_path: Path, monkeypatch, capsys) -> None:
    (tmp_path / "cases").mkdir()
    monkeypatch.chdir(tmp_path)

    def refuse(path: object) -> None:
        raise PermissionError(13, "Permission denied")

    # Running as root, the kernel lists any folder: stand in for one it would not.
    monkeypatch.setattr(os, "scandir", refuse)
    refusal = refusal_of("yaml", "cases")
    assert type(refusal) is CaseDirectoryUnreadable
    assert refusal.line() == "CaseDirectoryUnreadable: Could not list cases: Permission denied"


def test_permissions_refuse_for_real(tmp_path: Path, monkeypatch) -> None:
    """Real permission bits, in a child that drops root (root reads every file)."""
    monkeypatch.chdir(tmp_path)
    Path("cases").mkdir()
    Path("cases/a.yaml").write_text("name: A\ntask: B\n")
    Path("evals.json").write_text('{"evals": []}')
    os.chmod("evals.json", 0)
    os.chmod("cases", 0)
    os.chmod(tmp_path, 0o755)
    code = (
        "import os, sys, json, yaml, yaml.constructor\n"
        "from anpord.importers import import_cases, ImportRefusal\n"
        "import anpord.importers._evals_json, anpord.importers._yaml_cases\n"
        "# Everything imported first: the interpreter's own files may sit where nobody can read.\n"
        "if os.geteuid() == 0:\n"
        "    os.setgid(65534); os.setuid(65534)\n"
        "for fmt, path in (('evals-json', 'evals.json'), ('yaml', 'cases')):\n"
        "    try:\n"
        "        import_cases(fmt, path)\n"
        "    except ImportRefusal as exc:\n"
        "        print(type(exc).__name__)\n"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": src},
        )
    finally:
        os.chmod("cases", 0o755)
        os.chmod("evals.json", 0o644)
    assert done.stdout.split() == ["CaseFileUnreadable", "CaseDirectoryUnreadable"], done.stderr


# -- files of other shapes, and cases that do not match -------------------------------------------


def _evals(tmp_path: Path, data: object, name: str = "evals.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def _case(**fields: object) -> dict[str, object]:
    return {"id": 1, "prompt": "Say hi.", "assertions": ["It says hi."], **fields}


SHAPE_REFUSALS = [
    ([_case()], f"the top level is an array; {_SHAPE}"),
    ("just text", f'the top level is "just text"; {_SHAPE}'),
    ({"skill": "x", "cases": [_case()]}, f'evals: is missing (found "cases" instead); {_SHAPE}'),
    (
        {"skill_name": "x", "test_cases": []},
        f'evals: is missing (found "test_cases" instead); {_SHAPE}',
    ),
    ({"skill_name": "x"}, f"evals: is missing; {_SHAPE}"),
    (
        {"evals": {"1": _case()}},
        'evals: Expected an array of cases, actual {"1": {"id": 1, "prompt": "Say hi.", "assertions": ["It says hi."]}}',
    ),
    ({"skill_name": 3, "evals": [_case()]}, "skill_name: Expected string, actual 3"),
    ({"evals": ["a case"]}, 'case at index 0: Expected an object, actual "a case"'),
    ({"evals": [{"prompt": "p", "assertions": []}]}, "case at index 0, id: is missing"),
    ({"evals": [_case(id=1.5)]}, "case at index 0, id: Expected integer or string, actual 1.5"),
    ({"evals": [_case(id=True)]}, "case at index 0, id: Expected integer or string, actual true"),
    ({"evals": [_case(), {"id": "late", "assertions": []}]}, "case late, prompt: is missing"),
    ({"evals": [_case(name=["a"])]}, 'case 1, name: Expected string, actual ["a"]'),
    ({"evals": [_case(expected_output=7)]}, "case 1, expected_output: Expected string, actual 7"),
    (
        {"evals": [_case(files="fixtures/x")]},
        'case 1, files: Expected an array of strings, actual "fixtures/x"',
    ),
    ({"evals": [_case(files=["ok", 2])]}, "case 1, files.1: Expected string, actual 2"),
    (
        {"evals": [_case(assertions="It says hi.")]},
        'case 1, assertions: Expected an array, actual "It says hi."',
    ),
    (
        {"evals": [_case(expectations=[3])]},
        "case 1, expectations.0: Expected a string, or an object with text, actual 3",
    ),
    (
        {"evals": [_case(assertions=[{"kind": "content_matches", "text": "t", "needles": ["a"]}])]},
        (
            'case 1, assertions.0.kind: Expected "content_contains_any" | "content_contains_all" | '
            '"content_contains_none", actual "content_matches"'
        ),
    ),
    (
        {"evals": [_case(assertions=[{"kind": "content_contains_all", "needles": ["a"]}])]},
        "case 1, assertions.0.text: is missing",
    ),
    (
        {"evals": [_case(assertions=[{"kind": "content_contains_all", "text": "t"}])]},
        "case 1, assertions.0.needles: is missing",
    ),
    (
        {
            "evals": [
                _case(assertions=[{"kind": "content_contains_all", "text": "t", "needles": []}])
            ]
        },
        "case 1, assertions.0.needles: Expected at least one needle, actual []",
    ),
    (
        {
            "evals": [
                _case(
                    assertions=[
                        {"kind": "content_contains_none", "text": "t", "needles": ["a", ""]}
                    ]
                )
            ]
        },
        'case 1, assertions.0.needles.1: Expected a non-empty string, actual ""',
    ),
    (
        {"evals": [_case(assertions=[{"weight": 2}])]},
        'case 1, assertions.0: Expected a string, or an object with text, actual {"weight": 2}',
    ),
    (
        {
            "evals": [
                _case(id=1, prompt=1),
                _case(id=2, prompt=2),
                _case(id=3, prompt=3),
                _case(id=4, prompt=4),
            ]
        },
        (
            "case 1, prompt: Expected string, actual 1; case 2, prompt: Expected string, actual 2; "
            "case 3, prompt: Expected string, actual 3; and 1 more"
        ),
    ),
    (
        {"evals": [_case(id="two\nlines", prompt=None)]},
        "case two\\nlines, prompt: Expected string, actual null",
    ),
]


@pytest.mark.parametrize(("data", "reason"), SHAPE_REFUSALS)
def test_evals_json_shape_refusals(tmp_path: Path, data: object, reason: str) -> None:
    path = _evals(tmp_path, data)
    refusal = refusal_of("evals-json", path)
    assert type(refusal) is CaseFileNotEvalsJson
    assert refusal.message == f"{path} is not an evals-json file: {reason}"
    assert "\n" not in refusal.line()


def test_not_utf8_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "evals.json"
    path.write_bytes(b'{"evals": ["\xff"]}')
    refusal = refusal_of("evals-json", str(path))
    assert type(refusal) is CaseFileNotJson
    assert refusal.message == f"{path} is not JSON: not UTF-8 text (invalid byte at offset 12)"


def test_deep_nesting_is_refused_not_crashed(tmp_path: Path) -> None:
    path = tmp_path / "evals.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert type(refusal_of("evals-json", str(path))) is CaseFileNotJson


YAML_REFUSALS = [
    ("", "Expected a mapping with name and task, actual null"),
    (
        "- name: A\n  task: B\n",
        'Expected a mapping with name and task, actual [{"name": "A", "task": "B"}]',
    ),
    ("task: Do it\n", "name: is missing"),
    ("name: A\n", "task: is missing"),
    ("name: 2024-01-02\ntask: t\n", "name: Expected string, actual 2024-01-02 (a date)"),
    (
        "name: A\ntask: t\njudge_context: be good\n",
        'judge_context: Expected an array of strings, actual "be good"',
    ),
    ("name: A\ntask: t\njudge_context: [ok, 5]\n", "judge_context.1: Expected string, actual 5"),
    ("name: A\ntask: t\nmax_steps: twelve\n", 'max_steps: Expected integer, actual "twelve"'),
    ("name: A\ntask: t\nmax_steps: true\n", "max_steps: Expected integer, actual true"),
    ("name: 1\ntask: 2\n", "name: Expected string, actual 1; task: Expected string, actual 2"),
]


@pytest.mark.parametrize(("text", "reason"), YAML_REFUSALS)
def test_yaml_case_refusals(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "case.yaml"
    path.write_text(text, encoding="utf-8")
    refusal = refusal_of("yaml", str(path))
    assert type(refusal) is CaseFileNotYamlCase
    assert refusal.message == f"{path} is not a yaml case: {reason}"


def test_two_yaml_documents_are_not_one_case(tmp_path: Path) -> None:
    path = tmp_path / "case.yaml"
    path.write_text("name: A\ntask: B\n---\nname: C\ntask: D\n")
    refusal = refusal_of("yaml", str(path))
    assert type(refusal) is CaseFileNotYaml
    assert "expected a single document" in refusal.message
    assert "\n" not in refusal.message


def test_only_yaml_suffixes_count_in_a_directory(tmp_path: Path) -> None:
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "notes.txt").write_text("name: A\ntask: B\n")
    (folder / "case.YAML.bak").write_text("name: A\ntask: B\n")
    (folder / "nested.yaml").mkdir()
    assert type(refusal_of("yaml", str(folder))) is CaseDirectoryEmpty


def test_refusal_names_the_format_choices(capsys) -> None:
    code, _, err = cli(capsys, "--format", "csv", "cases.csv")
    assert code == 2
    assert "invalid choice: 'csv'" in err


def test_an_evals_json_file_read_as_yaml_gets_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "evals.json"
    path.write_text('{"skill_name": "s", "evals": [{"id": 1, "prompt": "p", "assertions": []}]}')
    refusal = refusal_of("yaml", str(path))
    assert type(refusal) is CaseFileNotYamlCase
    assert refusal.line() == (
        f"CaseFileNotYamlCase: {path} is not a yaml case: name: is missing; task: is missing "
        "(it holds an evals list: is it --format evals-json?)"
    )


# -- paths that are not files ---------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["evals-json", "yaml"])
def test_a_fifo_a_device_or_a_huge_file_is_refused_at_once(tmp_path: Path, fmt: str) -> None:
    """Read in a subprocess with a timeout: reading a FIFO or /dev/zero would hang or fill memory."""
    from anpord.importers._files import CASE_FILE_LIMIT

    os.mkfifo(tmp_path / "cases.fifo")
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(CASE_FILE_LIMIT + 1)  # sparse: nothing is written to disk
    src = str(Path(__file__).resolve().parents[2] / "src")
    expected = {
        str(tmp_path / "cases.fifo"): "it is a FIFO, not a file",
        "/dev/zero": "it is a device, not a file",
        str(huge): f"it is larger than {CASE_FILE_LIMIT:,} bytes",
    }
    for path, reason in expected.items():
        done = subprocess.run(
            [sys.executable, "-m", "anpord", "eval", "import", "--format", fmt, path],
            capture_output=True, text=True, timeout=30, env={**os.environ, "PYTHONPATH": src},
        )
        assert done.returncode == 2 and done.stdout == "", done
        assert done.stderr == f"CaseFileUnreadable: Could not read {path}: {reason}\n"
