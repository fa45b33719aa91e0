"""openai-evals: an OpenAI evals registry spec (``<name>: {id}``, ``<id>: {class, args}``) and
its samples, or a samples JSONL of ``{"input", "ideal"}`` lines directly.

The spec's ``samples_jsonl`` is read relative to the registry's ``data/`` folder (the spec lives
in ``registry/evals/``), then relative to the spec itself. The basic classes convert exactly,
as their code compares: ``Match`` (the completion starts with an ideal), ``Includes`` (contains
one) and ``FuzzyMatch`` (either contains the other, normalised). ``ModelBasedClassify`` becomes
a judge with its ``modelgraded`` prompt; any other class is a placeholder naming it.
"""

from __future__ import annotations

import json
import os
from typing import Any, NamedTuple

from ._chat import chat_text, is_chat
from ._errors import (
    CaseFileEmpty,
    CaseFileNotOpenAIEvals,
    CaseFileNotYaml,
    CaseFileUnreadable,
)
from ._files import read_text
from ._model import Check, CaseFile, Coded, ImportedCase, Judged, Unwritten
from ._tables import jsonl_values, refuse_lfs_pointer
from ._text import describe_actual, listing
from ._values import field_name, render
from ._yaml_load import YamlUnreadable, load_yaml

__all__ = ["read_openai_evals"]

_SAMPLE = {"input", "ideal"}
_BASIC = ("Match", "Includes", "FuzzyMatch")
_MODELGRADED = "ModelBasedClassify"
_SOURCE = "An OpenAI eval sends the prompt alone, so the case starts from no files."


class _Eval(NamedTuple):
    name: str
    cls: str  # the class's own name: "Match", "Includes", …
    spec: str  # as the file wrote it: "evals.elsuite.basic.match:Match"
    args: dict[str, Any]


def _refuse(path: str, reason: str) -> CaseFileNotOpenAIEvals:
    return CaseFileNotOpenAIEvals(path, reason)


def _evals(path: str, data: Any) -> list[_Eval]:
    """The evals a spec file defines: each ``<name>: {id}`` whose id names a ``{class}`` entry,
    or (a file of bare ids) each ``{class}`` entry itself."""
    if not isinstance(data, dict):
        raise _refuse(
            path,
            f"Expected a mapping of eval names to {{id}} and {{class, args}}, actual {describe_actual(data)}",
        )
    out: list[_Eval] = []
    named = {field_name(key): value for key, value in data.items() if isinstance(value, dict)}
    pointed: set[str] = set()
    for name, entry in named.items():
        ident = entry.get("id")
        if isinstance(ident, str) and ident in named:
            pointed.add(ident)
            out.append(_make(path, name, ident, named[ident]))
    # An entry with a class that no name points at is an eval too (run by its id).
    out += [
        _make(path, name, name, entry)
        for name, entry in named.items()
        if "class" in entry and name not in pointed
    ]
    if not out:
        found = listing(list(named)) or "nothing"
        raise _refuse(
            path,
            f"no eval in it names a class (found {found}); expected <name>: {{id: <id>}} and <id>: {{class: ..., args: {{samples_jsonl: ...}}}}",
        )
    return out


def _make(path: str, name: str, ident: str, entry: dict[str, Any]) -> _Eval:
    spec = entry.get("class")
    if not isinstance(spec, str):
        raise _refuse(path, f"{ident}.class: Expected string, actual {describe_actual(spec)}")
    args = entry.get("args", {})
    if not isinstance(args, dict):
        raise _refuse(path, f"{ident}.args: Expected a mapping, actual {describe_actual(args)}")
    return _Eval(name=name, cls=spec.rsplit(":", 1)[-1].rsplit(".", 1)[-1], spec=spec, args=args)


def _find(spec_path: str, relative: str, folder: str) -> str | None:
    here = os.path.dirname(spec_path) or "."
    registry = os.path.dirname(os.path.abspath(here))
    for candidate in (
        os.path.join(registry, folder, relative),
        os.path.join(here, folder, relative),
        os.path.join(here, relative),
    ):
        if os.path.isfile(candidate):
            return candidate
    return None


def _samples(path: str) -> list[tuple[int, dict[str, Any]]]:
    text = read_text(path, CaseFileNotOpenAIEvals)
    refuse_lfs_pointer(path, text)
    out = []
    for number, value in jsonl_values(path, text, CaseFileNotOpenAIEvals):
        if not isinstance(value, dict):
            raise _refuse(
                path,
                f"line {number}: Expected an object with input and ideal, actual {describe_actual(value)}",
            )
        out.append((number, value))
    return out


def _prompt(path: str, number: int, value: Any) -> tuple[str, str | None]:
    if isinstance(value, str):
        return value, None
    if is_chat(value):
        return chat_text(value)
    raise _refuse(
        path,
        f"line {number}, input: Expected a string or a list of chat messages, actual {describe_actual(value)}",
    )


def _ideals(path: str, number: int, sample: dict[str, Any], required: bool) -> list[str] | None:
    if "ideal" not in sample:
        if required:
            raise _refuse(path, f"line {number}, ideal: is missing")
        return None
    ideal = sample["ideal"]
    if isinstance(ideal, (int, float)) and not isinstance(ideal, bool):
        ideal = str(ideal)
    if isinstance(ideal, str):
        return [ideal]
    if isinstance(ideal, list) and ideal and all(isinstance(one, str) for one in ideal):
        return list(ideal)
    if required:
        raise _refuse(
            path,
            f"line {number}, ideal: Expected a string or a list of strings, actual {describe_actual(ideal)}",
        )
    return None


def _graded_prompt(spec_path: str, name: Any) -> tuple[str | None, str]:
    """The modelgraded spec's prompt, and where it came from (or why it is missing)."""
    if not isinstance(name, str):
        return None, f"modelgraded_spec is {describe_actual(name)}"
    found = _find(spec_path, f"{name}.yaml", "modelgraded")
    if found is None:
        return (
            None,
            f"the modelgraded spec {name}.yaml is not in the registry's modelgraded/ folder",
        )
    try:
        data = load_yaml(read_text(found, CaseFileNotYaml))
    except YamlUnreadable as error:
        raise CaseFileNotYaml(found, error.reason) from None
    entry = data.get(name) if isinstance(data, dict) else None
    prompt = entry.get("prompt") if isinstance(entry, dict) else None
    if is_chat(prompt):
        prompt = "\n\n".join(m["content"] for m in prompt)  # type: ignore[union-attr]
    if not isinstance(prompt, str):
        return None, f"{found} holds no prompt for {name}"
    return prompt, found


class _Checker:
    """One eval's check for each sample."""

    def __init__(self, spec_path: str, ev: _Eval | None) -> None:
        self.ev = ev
        self.rubric: str | None = None
        self.rubric_note = ""
        if ev is not None and ev.cls == _MODELGRADED:
            self.rubric, self.rubric_note = _graded_prompt(
                spec_path, ev.args.get("modelgraded_spec")
            )

    def checks(
        self, prompt: str, ideals: list[str] | None
    ) -> tuple[tuple[Check, ...], tuple[Judged, ...]]:
        ev = self.ev
        shown = render(ideals if ideals and len(ideals) > 1 else (ideals or [""])[0], 300)
        if ev is None:
            return (
                Unwritten(
                    f"The samples file does not say how the answer is compared with the ideal answer, {shown}: import the registry spec that names its class, or write the check."
                ),
            ), ()
        if ev.cls == "Match" and ideals:
            return (
                Coded("_starts_with", f"Match: the answer starts with {shown}", (tuple(ideals),)),
            ), ()
        if ev.cls == "Includes" and ideals:
            ignore = ev.args.get("ignore_case") is True
            return (
                Coded(
                    "_text_has",
                    f"Includes: the answer contains {shown}",
                    (tuple(ideals),),
                    (("every", False), ("ignore_case", ignore)),
                ),
            ), ()
        if ev.cls == "FuzzyMatch" and ideals:
            return (Coded("_fuzzy_match", f"FuzzyMatch: {shown}", (tuple(ideals),)),), ()
        if ev.cls == _MODELGRADED and self.rubric is not None:
            rubric = self.rubric.replace("{input}", prompt)
            if ideals:
                rubric = rubric.replace("{ideal}", "\n".join(ideals))
            notes = (
                f"The prompt of {self.rubric_note}, with the sample's input and ideal filled in; the judge reads the answer itself where it says {{completion}}.",
            )
            return (), (
                Judged(
                    name=str(ev.args.get("modelgraded_spec", "modelgraded")),
                    rubric=rubric,
                    notes=notes,
                ),
            )
        why = self.rubric_note if ev.cls == _MODELGRADED else f"anpord has no {ev.cls}"
        return (
            Unwritten(
                f"Write the check the eval class {ev.spec} makes ({why}); the ideal answer is {shown}"
            ),
        ), ()


def read_openai_evals(path: str) -> CaseFile:
    """Read a registry spec and its samples, or a samples JSONL; refuse rather than guess."""
    if not os.path.isfile(path):
        reason = (
            "it is a folder: name the spec YAML or the samples JSONL"
            if os.path.isdir(path)
            else "No such file or directory"
        )
        raise CaseFileUnreadable(path, reason)
    notes: list[str] = []
    plan: list[tuple[_Eval | None, str]] = []
    missing: list[tuple[str, str]] = []  # (eval, samples) whose samples are not there
    if path.lower().endswith((".jsonl", ".json")):
        plan.append((None, path))
        notes.append(
            f"{path} is samples alone: each case gets a placeholder naming its ideal answer, since only the registry spec says how it is compared."
        )
    else:
        text = read_text(path, CaseFileNotYaml)
        refuse_lfs_pointer(path, text)
        try:
            data = load_yaml(text)
        except YamlUnreadable as error:
            raise CaseFileNotYaml(path, error.reason) from None
        if data is None:
            raise CaseFileEmpty(path)
        for ev in _evals(path, data):
            samples = ev.args.get("samples_jsonl")
            if not isinstance(samples, str):
                raise _refuse(
                    path,
                    f"{ev.name}: args.samples_jsonl: Expected a path, actual {describe_actual(samples)}",
                )
            found = _find(path, samples, "data")
            if found is None:
                missing.append((ev.name, samples))
                continue
            plan.append((ev, found))
            for key, value in ev.args.items():
                if key not in ("samples_jsonl", "modelgraded_spec", "ignore_case"):
                    notes.append(
                        f"Not imported, from {ev.name}'s args: {field_name(key)} = {render(value, 200)}"
                    )
    if missing and not plan:
        name, samples = missing[0]
        raise CaseFileUnreadable(
            samples,
            f"named by {name} in {path}; looked in the registry's data/ folder and beside the spec",
        )
    for name, samples in missing:
        notes.append(
            f"Skipped {name}: its samples {samples} are not in the registry's data/ folder."
        )
    cases: list[ImportedCase] = []
    for ev, samples_path in plan:  # type: ignore[assignment]
        checker = _Checker(path, ev)
        label = ev.name if ev is not None else os.path.splitext(os.path.basename(samples_path))[0]
        for number, sample in _samples(samples_path):
            needs_ideal = ev is not None and ev.cls in _BASIC
            custom = ev is not None and ev.cls not in _BASIC and ev.cls != _MODELGRADED
            readable = isinstance(sample.get("input"), str) or is_chat(sample.get("input"))
            if "input" in sample and (readable or not custom):
                prompt, chat_note = _prompt(samples_path, number, sample["input"])
            elif custom:
                # A class of its own reads its own fields: the sample, whole, is what it gets.
                prompt = json.dumps(sample, ensure_ascii=False)
                chat_note = f"The sample has no input text: {ev.cls} builds its prompt from these fields, so write the prompt this case sends."
            else:
                raise _refuse(samples_path, f"line {number}, input: is missing")
            ideals = _ideals(samples_path, number, sample, needs_ideal)
            checks, judges = checker.checks(prompt, ideals)
            case_notes = [f"{label}, sample on line {number} of {os.path.basename(samples_path)}"]
            if chat_note is not None:
                case_notes.append(chat_note)
            if not custom:
                case_notes += [
                    f"Not imported, from the sample: {field_name(k)} = {render(v, 300)}"
                    for k, v in sample.items()
                    if k not in _SAMPLE
                ]
            cases.append(
                ImportedCase(
                    own_id=f"{label} {number}",
                    name=None,
                    prompt=prompt,
                    checks=checks,
                    notes=tuple(case_notes),
                    source_note=_SOURCE,
                    judges=judges,
                )
            )
    if not cases:
        raise CaseFileEmpty(path)
    return CaseFile(
        format="openai-evals", path=path, cases=tuple(cases), notes=tuple(dict.fromkeys(notes))
    )
