"""Random JSON and YAML through the importer, in and out of shape: every input either imports
into a module that compiles and loads, or is refused with a named refusal on one line (exit 2
from the command). No other exception, ever."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from importers_support import load

from anpord import importers
from anpord.cli.import_cmd import main
from anpord.importers import ImportRefusal, import_cases

REFUSALS = {
    name
    for name in importers.__all__
    if isinstance(getattr(importers, name), type)
    and issubclass(getattr(importers, name), ImportRefusal)
    and name != "ImportRefusal"
}
SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))


class Raw:
    """A JSON token written as is: numbers too long for Python to print, NaN, Infinity."""

    def __init__(self, text: str) -> None:
        self.text = text


def to_json(value: Any, indent: str | None) -> str:
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        items = [f"{json.dumps(key)}: {to_json(item, indent)}" for key, item in value.items()]
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list):
        return "[" + (",\n" if indent else ", ").join(to_json(item, indent) for item in value) + "]"
    return json.dumps(value)


NASTY = ["", " ", "\n", "\r\n", "\x00", "\ud800", "\u2028", "\ufeff", '"', "\\", "#", "é", "-5"]
text = st.one_of(st.sampled_from(NASTY), st.text(max_size=12))
raw_number = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-0"]),
    st.integers(4290, 4310).map(lambda n: Raw("9" * n)),
    st.integers(4290, 4310).map(lambda n: Raw("-" + "1" * n)),
).map(lambda item: item if isinstance(item, Raw) else Raw(item))
json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), text, raw_number
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=12,
)
KINDS = ["content_contains_any", "content_contains_all", "content_contains_none", "other"]


def either(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the right type, sometimes anything at all."""
    return st.one_of(good, good, json_value)


assertion = st.one_of(
    text,
    json_value,
    st.fixed_dictionaries(
        {},
        optional={
            "kind": either(st.sampled_from(KINDS)),
            "text": either(text),
            "needles": either(st.lists(either(text), max_size=3)),
            "description": either(text),
            "name": either(text),
            "id": either(st.integers()),
            "weight": json_value,
        },
    ),
)
json_case = st.fixed_dictionaries(
    {},
    optional={
        "id": either(st.one_of(st.integers(-10, 10), text, raw_number)),
        "prompt": either(text),
        "name": either(text),
        "eval_name": either(text),
        "expected_output": either(text),
        "files": either(st.lists(either(text), max_size=2)),
        "assertions": either(st.lists(assertion, max_size=3)),
        "expectations": either(st.lists(either(text), max_size=2)),
        "scorers": json_value,
    },
)
evals_json = st.one_of(
    json_value,
    st.fixed_dictionaries(
        {"evals": either(st.lists(either(json_case), max_size=4))},
        optional={"skill_name": either(text), "cases": json_value},
    ),
)


def outcome(fmt: str, path: Path) -> None:
    """Import in-process, then through the command; both must end in one of the two ways."""
    try:
        suite = import_cases(fmt, str(path))
    except ImportRefusal as refusal:
        assert type(refusal).__name__ in REFUSALS
        line = refusal.line()
        assert "\n" not in line and line.isprintable()
        expected_code = 2
    else:
        load(suite.source)
        expected_code = 0

    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8")
    stderr = io.TextIOWrapper(err, encoding="utf-8")
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["--format", fmt, str(path)])
        stdout.flush()
        stderr.flush()
    assert code == expected_code
    said = err.getvalue().decode("utf-8")
    if code == 2:
        assert said.count("\n") == 1 and said.split(":", 1)[0] in REFUSALS
        assert out.getvalue() == b""
    else:
        compile(out.getvalue().decode("utf-8"), "imported.eval.py", "exec")


@SETTINGS
@given(evals_json, st.booleans(), st.sampled_from(["", "\ufeff"]), st.sampled_from(["\n", "\r\n"]))
def test_any_json_imports_or_is_refused_on_one_line(
    data: Any, indented: bool, mark: str, newline: str
) -> None:
    body = to_json(data, "  " if indented else None).replace("\n", newline)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "evals.json"
        path.write_text(mark + body, encoding="utf-8", errors="surrogatepass")
        outcome("evals-json", path)


# -- yaml ----------------------------------------------------------------------------------------

yaml_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    text.filter(lambda s: "\ud800" not in s),
    st.dates(),
    st.datetimes(timezones=st.one_of(st.none(), st.timezones())),
    st.binary(max_size=8),
)
yaml_value = st.recursive(
    yaml_leaf,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.one_of(text, st.integers(), st.dates()), inner, max_size=3)
        | st.sets(st.one_of(st.integers(), st.text(max_size=3)), max_size=3)
    ),
    max_leaves=12,
)
yaml_case = st.fixed_dictionaries(
    {},
    optional={
        "name": either(text),
        "task": either(text),
        "judge_context": either(st.lists(either(text), max_size=3)),
        "max_steps": either(st.integers()),
        "extra": yaml_value,
    },
)


@st.composite
def yaml_documents(draw: st.DrawFn) -> str:
    """A dumped case, sometimes sharing one value twice (an alias) or holding itself."""
    data = draw(st.one_of(yaml_case, yaml_value))
    if isinstance(data, dict) and draw(st.booleans()):
        shared = draw(st.lists(yaml_value, min_size=1, max_size=3))
        data["first"], data["second"] = shared, shared
        if draw(st.booleans()):
            shared.append(shared)  # a value inside itself: an alias to its own anchor
    style = draw(st.sampled_from([None, True, False]))
    try:
        text = yaml.safe_dump(data, default_flow_style=style, allow_unicode=draw(st.booleans()))
    except (yaml.YAMLError, ValueError, OverflowError):  # values the dumper cannot write
        text = "name: a\ntask: b\n"
    tail = draw(st.lists(st.sampled_from(YAML_PIECES), max_size=6).map("".join))
    return text + tail


YAML_PIECES = [
    "extra: ",
    "\n",
    "  - ",
    "<<: *id001\n",
    "x: !!python/object:os.system ls\n",
    "x: !!int 0x" + "f" * 4000 + "\n",
    "x: " + "9" * 4400 + "\n",
    "x: 2024-02-30\n",
    "x: !!bool maybe\n",
    "x: !!set {a, b}\n",
    "x: &z [*z]\n",
    "? [a]\n: b\n",
    "\t",
    "\r\n",
    "\ufeff",
    "!",
    "|#",
    "[?]",
    "max_steps: " + "1" * 5000 + "\n",
]


@SETTINGS
@given(yaml_documents(), st.sampled_from(["", "\ufeff"]), st.sampled_from(["\n", "\r\n", "\r"]))
def test_any_yaml_imports_or_is_refused_on_one_line(text: str, mark: str, newline: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "case.yaml"
        path.write_text(mark + text.replace("\n", newline), encoding="utf-8")
        outcome("yaml", path)
