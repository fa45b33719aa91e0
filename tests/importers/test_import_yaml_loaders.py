"""YAML is read by PyYAML's C loader where it is safe and by its pure-Python loader elsewhere;
the result is the pure-Python loader's either way, value for value and refusal for refusal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from importers_support import FIXTURES, load, run_anpord

from anpord.importers import import_cases
from anpord.importers._yaml_load import (
    _DISAGREE,
    YamlUnreadable,
    _load,
    _loaders,
    _parser_bounds_nesting,
    _reason,
    _shallow,
    load_yaml,
)

YAML_FILES = sorted(p for p in FIXTURES.rglob("*") if p.suffix.lower() in (".yaml", ".yml"))


def outcome_of_pure(text: str) -> tuple[str, Any]:
    """What the pure-Python loader alone makes of the text (after YAML's own line-break rule)."""
    _, _, pure = _loaders()
    try:
        return "value", _load(pure, text.replace("\r\n", "\n").replace("\r", "\n"))
    except yaml.YAMLError as error:
        return "refused", _reason(error)
    except RecursionError:
        return "refused", "nested too deeply to read"


def outcome(text: str) -> tuple[str, Any]:
    try:
        return "value", load_yaml(text)
    except YamlUnreadable as error:
        return "refused", error.reason


def same(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    return repr(a) == repr(b)  # repr: NaN is not equal to itself, its spelling is


def test_the_c_loader_is_built_when_libyaml_is_there() -> None:
    fast, events, pure = _loaders()
    assert pure is not None
    assert (fast is not None) is bool(yaml.__with_libyaml__) is (events is not None)


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_yaml_fixture_reads_the_same_with_both_loaders(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert same(outcome(text), outcome_of_pure(text))
    fast, events, _ = _loaders()
    if fast is not None and outcome(text)[0] == "value":
        assert _shallow(text) and not _DISAGREE.search(text)  # ordinary files take the fast path
        assert repr(_load(fast, text)) == repr(outcome(text)[1])
        assert repr(_load(events, text)) == repr(outcome(text)[1])


def outcome_of_events(text: str) -> tuple[str, Any]:
    """What libyaml's parser with the Python composer makes of the text: the loader a text
    too nested for the C composer gets."""
    _, events, _ = _loaders()
    try:
        return "value", _load(events, text.replace("\r\n", "\n").replace("\r", "\n"))
    except yaml.YAMLError:
        return "refused", None
    except RecursionError:
        return "refused", "nested too deeply to read"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["a", "b", "- ", ": ", "[", "]", "{", "}", ", ", "\n", "\n  ", "&x ", "*x", "<<: ", "'q'", '"d"', "1", "~"]), min_size=1, max_size=40).map("".join))
def test_the_event_loader_reads_what_the_pure_loader_reads(text: str) -> None:
    if not yaml.__with_libyaml__ or _DISAGREE.search(text):
        return
    pure = outcome_of_pure(text)
    events = outcome_of_events(text)
    if pure[0] == "value":
        assert same(events, pure)
    else:
        assert events[0] == "refused"  # load_yaml then asks the pure loader for the words


def test_a_long_file_takes_the_event_loader_and_reads_the_same() -> None:
    text = "".join(f"- {{a: [{i}, {{b: c}}], d: x{i}}}\n" for i in range(2000))
    assert not _shallow(text)
    assert same(outcome(text), outcome_of_pure(text))


def test_a_long_file_takes_the_c_loader_where_libyaml_bounds_nesting(monkeypatch: Any) -> None:
    # libyaml 0.2.5 and later refuse 1,000 levels, so the C composer's depth stays bounded
    # whatever the file's length; the long config of a real suite then reads at C speed.
    if not yaml.__with_libyaml__ or not _parser_bounds_nesting():
        pytest.skip("this libyaml does not bound nesting")
    fast, events, _ = _loaders()
    used: list[Any] = []
    monkeypatch.setattr(
        "anpord.importers._yaml_load._load", lambda loader, text: used.append(loader) or 1
    )
    assert load_yaml("".join(f"- {{a: [{i}, {{b: c}}], d: x{i}}}\n" for i in range(2000))) == 1
    assert used == [fast]


# Pieces of YAML syntax, so random texts reach the places the two parsers treat differently.
PIECES = list("ab -:?[]{},#&*!|>'\"\n\r\t %@`\\0.1e+xyz=<~") + [
    "\n  ",
    "\r\n",
    "- ",
    ": ",
    "\u2028",
    "\x85",
    "\ufeff",
    "<<",
    "!!str ",
    "!!binary ",
    "!!int ",
    "!!set ",
    "---",
    "...",
    "2024-01-02",
    "0x1F",
    "1:30",
    ".inf",
    "&a ",
    "*a",
    "%YAML 1.1\n",
    "!x ",
    "name: ",
    "task: ",
    "judge_context:\n",
]
yaml_like = st.lists(st.sampled_from(PIECES), min_size=1, max_size=40).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(yaml_like)
def test_any_text_reads_as_the_pure_python_loader_reads_it(text: str) -> None:
    assert same(outcome(text), outcome_of_pure(text))


def test_nesting_too_deep_for_the_c_stack_is_refused_not_crashed(tmp_path: Path) -> None:
    # The C loader would recurse 100,000 times on the C stack and kill the interpreter.
    depth = 100_000
    (tmp_path / "deep.yaml").write_text(
        "name: A\ntask: B\nextra: " + "[" * depth + "]" * depth + "\n"
    )
    done = run_anpord("eval", "import", "--format", "yaml", "deep.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "CaseFileNotYaml: deep.yaml is not YAML: nested too deeply to read\n"


def test_nesting_the_c_loader_reads_safely_imports(tmp_path: Path) -> None:
    # Deeper than the pure-Python loader's recursion reaches, within what every libyaml reads
    # (newer ones refuse more than 1,000 levels, and then the file is "nested too deeply").
    depth = 900
    path = tmp_path / "deep.yaml"
    path.write_text("name: A\ntask: B\nextra: " + "[" * depth + "]" * depth + "\n")
    source = import_cases("yaml", str(path)).source
    load(source)
    assert "# Not imported, from the file: extra = " + "[" * 499 + "…" in source.splitlines()
