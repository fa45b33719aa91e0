"""promptfoo: a ``promptfooconfig.yaml`` (or a folder holding one) as prompts × tests.

Each prompt, rendered with each test's ``vars`` the way promptfoo renders them (Nunjucks, here
Jinja2 in its sandbox), is one case; the test's assertions, with ``defaultTest``'s merged in as
promptfoo merges them, are its checks. ``file://`` prompts, tests, vars and ``defaultTest`` are
read relative to the config, CSV tests included (their ``__expected`` cells are assertions).
Array vars expand into one test per combination, as promptfoo expands them; ``scenarios`` cross
each of their ``config`` entries with each of their tests.
"""

from __future__ import annotations

import glob
import itertools
import json
import os
import re
from typing import Any, NamedTuple

from ._chat import chat_text, is_chat
from ._errors import (
    CaseFileEmpty,
    CaseFileNotJson,
    CaseFileNotPromptfoo,
    CaseFileNotYaml,
    CaseFileUnreadable,
)
from ._files import read_text
from ._model import CaseFile, ImportedCase, Unwritten
from ._promptfoo_asserts import assertion_from_csv, convert_assertions
from ._promptfoo_providers import variants_of
from ._tables import csv_rows, jsonl_values, refuse_lfs_pointer
from ._templates import RenderFailed, render_template
from ._text import describe_actual, listing
from ._values import field_name, parse_int, render
from ._yaml_load import YamlUnreadable, load_yaml

__all__ = ["CONFIG_NAMES", "NO_ASSERTION", "read_promptfoo"]

CONFIG_NAMES = ("promptfooconfig.yaml", "promptfooconfig.yml", "promptfooconfig.json")
NO_ASSERTION = "This test named no assertion. Write what a good answer is."
_TOP = {
    "description", "prompts", "providers", "targets", "tests", "defaultTest", "scenarios",
    "evaluateOptions", "outputPath", "env", "sharing", "commandLineOptions", "metadata", "tags",
    "extensions", "nunjucksFilters", "derivedMetrics", "redteam", "writeLatestResults", "$schema",
    "assertionTemplates",
}  # fmt: skip
_CASES_KEYS = ("prompts", "tests", "scenarios", "providers", "targets", "defaultTest")
_TEST = {"description", "vars", "assert", "options", "threshold", "metadata", "provider"}
_TEST_NOTED = {"threshold", "metadata", "provider"}
_MAX_EXPANSION = 1000  # cases one test's array vars may expand into
_SHOWN = 500
_TOP_KEY = re.compile(r"^([A-Za-z_$][\w$-]*)\s*:", re.MULTILINE)
_CODE_SUFFIXES = (".py", ".js", ".cjs", ".mjs", ".ts")
_TEST_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl", ".csv")


class _Prompt(NamedTuple):
    label: str
    text: str
    notes: tuple[str, ...] = ()
    chat: bool = False  # a JSON or YAML chat: messages to flatten once rendered


class _Test(NamedTuple):
    raw: dict[str, Any]
    where: str  # "tests[3]", "tests.csv line 4"


class _Reader:
    """Reading one config: where it lives, and the notes gathered on the way."""

    def __init__(self, path: str, base: str) -> None:
        self.path = path
        self.base = base
        self.notes: list[str] = []
        self.unknown: dict[str, list[str]] = {}
        self.document: Any = {}  # the config, for $ref

    def refuse(self, reason: str) -> CaseFileNotPromptfoo:
        return CaseFileNotPromptfoo(self.path, reason)

    # --- files ---------------------------------------------------------------------------

    def resolve(self, ref: str) -> str:
        name = ref[len("file://") :] if ref.startswith("file://") else ref
        return name if os.path.isabs(name) else os.path.join(self.base, name)

    def read(self, ref: str, why: str) -> str | None:
        """A referenced file's text, or None (noted) when it is not there."""
        target = self.resolve(ref)
        if not os.path.isfile(target):
            self.notes.append(f"{why} names {ref}, which is not there; it is kept as written.")
            return None
        return read_text(target, CaseFileNotYaml)

    def load(self, ref: str, why: str, *, required: bool) -> Any:
        """A referenced YAML, JSON, JSONL or CSV file's value (CSV: a list of test mappings)."""
        target = self.resolve(ref.split("#", 1)[0])
        if not os.path.isfile(target):
            if required:
                raise CaseFileUnreadable(target, f"named by {why} in {self.path}, not found")
            self.notes.append(f"{why} names {ref}, which is not there; it is kept as written.")
            return None
        text = read_text(target, CaseFileNotYaml)
        refuse_lfs_pointer(target, text)
        lower = target.lower()
        if lower.endswith(".csv"):
            return _csv_tests(target, text)
        if lower.endswith(".jsonl"):
            return [value for _, value in jsonl_values(target, text, CaseFileNotPromptfoo)]
        return _parse(target, text)

    # --- prompts -------------------------------------------------------------------------

    def prompts(self, raw: Any) -> list[_Prompt]:
        if raw is None:
            self.notes.append(
                "The config names no prompts, so each test's prompt var is the prompt "
                "(promptfoo's default, {{prompt}})."
            )
            return [_Prompt("prompt", "{{prompt}}")]
        if isinstance(raw, str):
            items: list[tuple[Any, str | None]] = [(raw, None)]
        elif isinstance(raw, list):
            items = [(item, None) for item in raw]
        elif isinstance(raw, dict):  # {path or text: label}
            items = [(key, str(label)) for key, label in raw.items()]
        else:
            raise self.refuse(f"prompts: Expected a list of prompts, actual {describe_actual(raw)}")
        out: list[_Prompt] = []
        for n, (item, label) in enumerate(items):
            out.extend(self.prompt(item, label, f"prompts[{n}]"))
        if not out:
            raise CaseFileEmpty(self.path)
        return out

    def prompt(self, item: Any, label: str | None, where: str) -> list[_Prompt]:
        if isinstance(item, dict):
            text = item.get("raw", item.get("content", item.get("id", item.get("file"))))
            given = item.get("label")
            label = given if isinstance(given, str) else label
            if not isinstance(text, str):
                raise self.refuse(
                    f"{where}: Expected a string or {{raw|id, label}}, actual {describe_actual(item)}"
                )
            if "raw" in item or "content" in item:
                return [_Prompt(label or text, text)]
            item = text
        if not isinstance(item, str):
            raise self.refuse(f"{where}: Expected a string, actual {describe_actual(item)}")
        ref = item.strip()
        is_file = ref.startswith("file://") or (
            "\n" not in ref and os.path.isfile(self.resolve(ref))
        )
        if not is_file:
            return [_Prompt(label or item, item)]
        name = ref[len("file://") :] if ref.startswith("file://") else ref
        path_part = name
        if not os.path.exists(self.resolve(name)) and ":" in os.path.basename(name):
            path_part = name.rsplit(":", 1)[0]  # file://prompts.py:function
        if any(ch in path_part for ch in "*?["):
            matches = sorted(glob.glob(self.resolve(path_part)))
            if not matches:
                self.notes.append(
                    f"{where} names {ref}, which matches no file; it is kept as written."
                )
                return [_Prompt(label or ref, ref)]
            found: list[_Prompt] = []
            for match in matches:
                found.extend(
                    self.prompt_file(match, os.path.relpath(match, self.base), None, where)
                )
            return found
        return self.prompt_file(self.resolve(path_part), name, label, where)

    def prompt_file(self, target: str, name: str, label: str | None, where: str) -> list[_Prompt]:
        bare = target
        lower = bare.lower()
        if lower.endswith(_CODE_SUFFIXES):
            note = (
                f"{where}: the prompt is built by code in {name}; anpord sends a prompt as text, "
                "so write the prompt this case sends."
            )
            return [_Prompt(label or name, f"file://{name}", (note,))]
        if not os.path.isfile(bare):
            self.notes.append(
                f"{where} names file://{name}, which is not there; it is kept as written."
            )
            return [_Prompt(label or name, f"file://{name}")]
        text = read_text(bare, CaseFileNotYaml)
        refuse_lfs_pointer(bare, text)
        if lower.endswith((".json", ".yaml", ".yml")):
            return [_Prompt(label or name, text, chat=True)]
        if lower.endswith(".jsonl"):
            return [
                _Prompt(
                    f"{label or name} line {number}",
                    json.dumps(value, ensure_ascii=False),
                    chat=True,
                )
                for number, value in jsonl_values(bare, text, CaseFileNotPromptfoo)
            ]
        parts = [part for part in re.split(r"^---$", text, flags=re.MULTILINE)]
        parts = [part.strip("\n") for part in parts if part.strip()]
        if len(parts) <= 1:
            return [_Prompt(label or name, text.strip("\n"))]
        return [_Prompt(f"{label or name} #{n + 1}", part) for n, part in enumerate(parts)]

    # --- tests ---------------------------------------------------------------------------

    def tests(self, raw: Any, where: str) -> list[_Test]:
        if raw is None:
            return []
        items = raw if isinstance(raw, list) else [raw]
        out: list[_Test] = []
        for n, item in enumerate(items):
            spot = f"{where}[{n}]" if isinstance(raw, list) else where
            if isinstance(item, str):
                out.extend(self.test_file(item, spot))
            elif isinstance(item, dict):
                out.append(_Test(item, spot))
            else:
                raise self.refuse(
                    f"{spot}: Expected a test mapping or a file:// path, actual {describe_actual(item)}"
                )
        return out

    def test_file(self, ref: str, where: str) -> list[_Test]:
        name = ref[len("file://") :] if ref.startswith("file://") else ref
        if name.lower().endswith(_CODE_SUFFIXES) or ":" in os.path.basename(name):
            raise self.refuse(
                f"{where}: the tests are generated by code ({ref}); export them to YAML, JSON "
                "or CSV and point tests at that file"
            )
        if any(ch in name for ch in "*?["):
            paths = sorted(os.path.abspath(one) for one in glob.glob(self.resolve(name)))
            if not paths:
                raise CaseFileUnreadable(
                    self.resolve(name), f"named by {where} in {self.path}, matches no file"
                )
        elif os.path.isdir(self.resolve(name)):
            # A folder: every test file in it, as promptfoo loads one.
            folder = os.path.abspath(self.resolve(name))
            paths = sorted(
                os.path.join(folder, entry)
                for entry in os.listdir(folder)
                if entry.lower().endswith(_TEST_SUFFIXES)
                and os.path.isfile(os.path.join(folder, entry))
            )
            if not paths:
                raise CaseFileUnreadable(folder, f"named by {where} in {self.path}, holds no tests")
        else:
            paths = [os.path.abspath(self.resolve(name))]
        out: list[_Test] = []
        for target in paths:
            shown = os.path.relpath(target, self.base)
            value = self.load(target, where, required=True)
            values = value if isinstance(value, list) else [value]
            for n, item in enumerate(values):
                if not isinstance(item, dict):
                    raise self.refuse(
                        f"{shown}, test {n + 1}: Expected a test mapping, actual {describe_actual(item)}"
                    )
                line = item.pop("__line", None)
                out.append(_Test(item, f"{shown} line {line}" if line else f"{shown} test {n + 1}"))
        return out

    def scenario_tests(self, raw: Any) -> list[_Test]:
        if raw is None:
            return []
        if not isinstance(raw, list):
            raise self.refuse(f"scenarios: Expected a list, actual {describe_actual(raw)}")
        out: list[_Test] = []
        for n, scenario in enumerate(raw):
            if isinstance(scenario, str):
                loaded = self.load(scenario, f"scenarios[{n}]", required=True)
                scenario = loaded[0] if isinstance(loaded, list) and len(loaded) == 1 else loaded
            if not isinstance(scenario, dict):
                raise self.refuse(
                    f"scenarios[{n}]: Expected a mapping, actual {describe_actual(scenario)}"
                )
            configs = scenario.get("config") or [{}]
            if isinstance(configs, str):
                configs = self.load(configs, f"scenarios[{n}].config", required=True)
            if not isinstance(configs, list):
                configs = [configs]
            tests = self.tests(scenario.get("tests"), f"scenarios[{n}].tests") or [
                _Test({}, f"scenarios[{n}]")
            ]
            label = scenario.get("description")
            for c, config in enumerate(configs):
                config = config if isinstance(config, dict) else {}
                for test in tests:
                    merged = _merge(config, test.raw)
                    if isinstance(label, str) and "description" not in test.raw:
                        merged["description"] = label
                    out.append(_Test(merged, f"{test.where} × scenarios[{n}].config[{c}]"))
        return out

    def variables(self, raw: Any, where: str) -> dict[str, Any]:
        if raw is None:
            return {}
        if isinstance(raw, str):
            raw = self.load(raw, f"{where}.vars", required=True)
        if isinstance(raw, list):  # a list of var mappings, merged
            merged: dict[str, Any] = {}
            for item in raw:
                if isinstance(item, dict):
                    merged.update(item)
            raw = merged
        if not isinstance(raw, dict):
            raise self.refuse(f"{where}.vars: Expected a mapping, actual {describe_actual(raw)}")
        out: dict[str, Any] = {}
        for key, value in raw.items():
            name = field_name(key)
            if isinstance(value, str) and value.startswith("file://"):
                out[name] = self.var_file(value, f"{where}.vars.{name}")
            elif isinstance(value, list):
                out[name] = [
                    (
                        self.var_file(item, f"{where}.vars.{name}")
                        if isinstance(item, str) and item.startswith("file://")
                        else item
                    )
                    for item in value
                ]
            else:
                out[name] = value
        return out

    def code(self, ref: str) -> str | None:
        """The text of ``file://check.py`` (or ``file://check.py:function``), if it is there."""
        name = ref[len("file://") :]
        target = self.resolve(name)
        if not os.path.isfile(target) and ":" in os.path.basename(name):
            target = self.resolve(name.rsplit(":", 1)[0])
        if not os.path.isfile(target):
            return None
        return read_text(target, CaseFileNotYaml)

    def dereference(self, item: Any, where: str) -> Any:
        """An assertion written as ``$ref: '#/assertionTemplates/name'``: the template it names
        in this config (its other fields win), as promptfoo resolves it."""
        if not isinstance(item, dict) or not isinstance(item.get("$ref"), str):
            return item
        ref = item["$ref"]
        target: Any = self.document
        if ref.startswith("#/"):
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, dict) else None
        else:
            target = None
        if not isinstance(target, dict):
            self.notes.append(
                f"{where}: $ref {ref} names nothing in this config; it is kept as written."
            )
            return item
        rest = {key: value for key, value in item.items() if key != "$ref"}
        return {**target, **rest}

    def var_file(self, ref: str, where: str) -> Any:
        name = ref[len("file://") :]
        lower = name.lower()
        if lower.endswith(_CODE_SUFFIXES) or lower.endswith(
            (".png", ".jpg", ".jpeg", ".gif", ".pdf", ".webp")
        ):
            self.notes.append(
                f"{where} is {ref}, which anpord does not read; it is kept as written."
            )
            return ref
        text = self.read(ref, where)
        return ref if text is None else text


def _parse(path: str, text: str) -> Any:
    """A config or referenced file's value: JSON for a ``.json`` file (YAML would read its
    ``\\ud83d\\ude00`` escapes as two halves of a character), YAML for anything else."""
    if path.lower().endswith(".json"):
        try:
            return json.loads(text, parse_int=parse_int)
        except json.JSONDecodeError as error:
            raise CaseFileNotJson(path, str(error)) from None
        except RecursionError:
            raise CaseFileNotJson(path, "nested too deeply to read") from None
    try:
        return load_yaml(text)
    except YamlUnreadable as error:
        raise CaseFileNotYaml(path, error.reason) from None


def _csv_tests(path: str, text: str) -> list[dict[str, Any]]:
    """promptfoo's CSV tests: columns are vars, ``__expected…`` cells assertions, and the other
    ``__`` columns the test's own fields."""
    _, rows = csv_rows(path, text, CaseFileNotPromptfoo)
    out: list[dict[str, Any]] = []
    for row in rows:
        test: dict[str, Any] = {"vars": {}}
        asserts: list[dict[str, Any]] = []
        for key, cell in row.items():
            if key.startswith("__expected"):
                if cell.strip():
                    asserts.append(assertion_from_csv(cell))
            elif key == "__description":
                test["description"] = cell
            elif key == "__metric":
                test["__metric"] = cell
            elif key == "__threshold":
                test["threshold"] = cell
            elif key.startswith("__"):
                test.setdefault("__fields", {})[key] = cell
            else:
                test["vars"][key] = cell
        metric = test.pop("__metric", None)
        if metric:
            for item in asserts:
                item["metric"] = metric
        if asserts:
            test["assert"] = asserts
        out.append(test)
    return out


def _merge(default: dict[str, Any], test: dict[str, Any]) -> dict[str, Any]:
    """promptfoo's merge of ``defaultTest`` into a test: the test's fields win; ``vars``,
    ``options`` and ``metadata`` merge key by key; assertions are the default's, then the
    test's."""
    if not default:
        return dict(test)
    merged = {**default, **test}
    for key in ("vars", "options", "metadata"):
        a, b = default.get(key), test.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            merged[key] = {**a, **b}
    a, b = default.get("assert"), test.get("assert")
    if isinstance(a, list) or isinstance(b, list):
        merged["assert"] = [
            *(a if isinstance(a, list) else []),
            *(b if isinstance(b, list) else []),
        ]
    return merged


def _expand(variables: dict[str, Any]) -> list[dict[str, Any]] | None:
    """One set of vars per combination of the array vars' items, as promptfoo expands them; None
    when that would be more than ``_MAX_EXPANSION``."""
    arrays = [key for key, value in variables.items() if isinstance(value, list) and value]
    if not arrays:
        return [variables]
    count = 1
    for key in arrays:
        count *= len(variables[key])
        if count > _MAX_EXPANSION:
            return None
    out = []
    for combination in itertools.product(*(variables[key] for key in arrays)):
        one = dict(variables)
        one.update(zip(arrays, combination))
        out.append(one)
    return out


def _flatten_chat(text: str) -> tuple[str, str | None]:
    """A rendered chat prompt as one prompt text: the user message when it is the only one,
    else every message as ``role: content``; and a note saying so (None for plain text)."""
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = load_yaml(text)
        except YamlUnreadable:
            return text, None
    if not is_chat(value):
        return text, None
    return chat_text(value)


def _config_path(path: str) -> str:
    if not os.path.isdir(path):
        return path
    for name in CONFIG_NAMES:
        candidate = os.path.join(path, name)
        if os.path.isfile(candidate):
            return candidate
    raise CaseFileNotPromptfoo(path, "the folder holds no promptfooconfig.yaml (or .yml, .json)")


def _repeated_keys(text: str) -> list[str]:
    seen: dict[str, int] = {}
    for key in _TOP_KEY.findall(text):
        seen[key] = seen.get(key, 0) + 1
    return [key for key, count in seen.items() if count > 1]


def read_promptfoo(path: str) -> CaseFile:
    """Read a promptfoo config; refuse it (an ``ImportRefusal``) rather than guess."""
    if not os.path.exists(path):
        raise CaseFileUnreadable(path, "No such file or directory")
    config = _config_path(path)
    text = read_text(config, CaseFileNotYaml)
    refuse_lfs_pointer(config, text)
    data = _parse(config, text)
    if data is None:
        raise CaseFileEmpty(config)
    if not isinstance(data, dict):
        raise CaseFileNotPromptfoo(
            config,
            f"Expected a mapping with prompts, providers and tests, actual {describe_actual(data)}",
        )
    if not any(key in data for key in _CASES_KEYS):
        found = listing([field_name(key) for key in data]) or "nothing"
        hint = " (it holds an evals list: is it --format evals-json?)" if "evals" in data else ""
        raise CaseFileNotPromptfoo(
            config, f"it has none of prompts, tests, providers (found {found}){hint}"
        )
    reader = _Reader(config, os.path.dirname(config) or ".")
    reader.document = data
    for key in _repeated_keys(text):
        reader.notes.append(
            f"The config repeats the top-level key {key}: only the last one is read "
            "(promptfoo itself refuses such a file)."
        )
    for key in data:
        if key not in _TOP:
            reader.notes.append(
                f"Not imported: {json.dumps(field_name(key), ensure_ascii=False)} (top level)."
            )
        elif key in ("redteam", "extensions", "nunjucksFilters", "derivedMetrics", "env"):
            reader.notes.append(f"Not imported: {key} = {render(data[key], 200)}")

    prompts = reader.prompts(data.get("prompts"))
    default = data.get("defaultTest") or {}
    if isinstance(default, str):
        default = reader.load(default, "defaultTest", required=True) or {}
    if not isinstance(default, dict):
        raise reader.refuse(f"defaultTest: Expected a mapping, actual {describe_actual(default)}")
    tests = reader.tests(data.get("tests"), "tests") + reader.scenario_tests(data.get("scenarios"))
    if not tests:
        tests = [_Test({}, "the config (no tests)")]
    providers = data.get("providers", data.get("targets"))
    if isinstance(providers, str) and providers.startswith("file://"):
        providers = reader.load(providers, "providers", required=False) or providers
    variants = variants_of(providers) if providers else ()

    cases = _cases(reader, prompts, default, tests)
    if not cases:
        raise CaseFileEmpty(config)
    for field, wheres in reader.unknown.items():
        hint = " (did you mean assert?)" if field in ("asserts", "assertions", "assert_") else ""
        reader.notes.append(
            f"Not imported: {json.dumps(field, ensure_ascii=False)} ({listing(wheres)}) "
            f"is not a promptfoo test field{hint}."
        )
    description = data.get("description")
    return CaseFile(
        format="promptfoo",
        path=path,
        cases=tuple(cases),
        notes=tuple(dict.fromkeys(reader.notes)),
        about=(f"Description: {description}",) if isinstance(description, str) else (),
        variants=variants,
    )


def _cases(
    reader: _Reader, prompts: list[_Prompt], default: dict[str, Any], tests: list[_Test]
) -> list[ImportedCase]:
    cases: list[ImportedCase] = []
    many = len(prompts) > 1
    for number, test in enumerate(tests, 1):
        raw = _merge(default, test.raw)
        for key in test.raw:
            if key not in _TEST and not str(key).startswith("__"):
                reader.unknown.setdefault(field_name(key), []).append(test.where)
        variables = reader.variables(raw.get("vars"), test.where)
        options = raw.get("options") if isinstance(raw.get("options"), dict) else {}
        expanded = [variables] if options.get("disableVarExpansion") is True else _expand(variables)  # type: ignore[union-attr]
        test_notes: list[str] = []
        if expanded is None:
            test_notes.append(
                f"Its array vars would expand into more than {_MAX_EXPANSION} tests, so they are "
                "passed to the prompt as arrays."
            )
            expanded = [variables]
        asserts = raw.get("assert")
        if asserts is not None and not isinstance(asserts, list):
            raise reader.refuse(
                f"{test.where}.assert: Expected a list, actual {describe_actual(asserts)}"
            )
        asserts = [reader.dereference(item, test.where) for item in asserts or []]
        description = raw.get("description")
        name = description if isinstance(description, str) and description.strip() else None
        for key, value in (raw.get("__fields") or {}).items():
            test_notes.append(f"The CSV's {key} column: {render(value, _SHOWN)}")
        for key in sorted(_TEST_NOTED & raw.keys()):
            test_notes.append(f"The test's {key} in the file: {render(raw[key], _SHOWN)}")
        for key, value in options.items():  # type: ignore[union-attr]
            if key not in ("provider", "transform", "disableVarExpansion"):
                test_notes.append(f"The test's options.{key} in the file: {render(value, _SHOWN)}")
        for e, one in enumerate(expanded):
            converted = convert_assertions(
                asserts, one, options.get("provider"), options.get("transform"), reader.code  # type: ignore[union-attr]
            )
            checks = converted.checks
            if not checks and not converted.judges:
                checks = (Unwritten(NO_ASSERTION),)
            base_id = name or f"test {number}"
            if len(expanded) > 1:
                base_id += f" ({e + 1} of {len(expanded)})"
            for k, prompt in enumerate(prompts):
                notes = [
                    f"From {test.where} of {os.path.basename(reader.path)}"
                    + (f", prompt {_short(prompt.label)}" if many else "")
                ]
                notes += prompt.notes
                text, failed, flattened = _render(prompt, one)
                if failed is not None:
                    notes.append(f"The prompt did not render ({failed}), so it is kept as written.")
                if flattened is not None:
                    notes.append(flattened)
                notes += test_notes
                notes += converted.notes
                own_id = f"{base_id} / prompt {k + 1}" if many else base_id
                cases.append(
                    ImportedCase(
                        own_id=own_id,
                        name=name,
                        prompt=text,
                        checks=checks,
                        notes=tuple(notes),
                        source_note="promptfoo sends the prompt alone, so the case starts from no files.",
                        fallback_key=f"test-{number}",
                        judges=converted.judges,
                    )
                )
    return cases


def _short(label: str) -> str:
    line = label.strip().split("\n", 1)[0]
    return line if len(line) <= 60 and "\n" not in label.strip() else line[:59] + "…"


def _render(prompt: _Prompt, variables: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """The prompt with the test's vars in (or the raw prompt, and why it did not render), and
    a note when a chat was flattened into it."""
    try:
        text = render_template(prompt.text, variables)
    except RenderFailed as error:
        return prompt.text, str(error), None
    if prompt.chat:
        flat, note = _flatten_chat(text)
        return flat, None, note
    return text, None, None
