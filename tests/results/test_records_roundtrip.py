"""Every record reads back exactly: ``from_dict(to_dict(r)) == r``, also through the JSON encoder
the run folder is written with, and ``to_dict(from_dict(d)) == d`` for what was written."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anpord.events import Event
from anpord.results import (
    FORMAT_VERSION,
    AssertionRecord,
    CellRecord,
    CellSummary,
    ErrorInfo,
    EventsRef,
    Judgment,
    RecordError,
    RunRecord,
    TrialResult,
)
from anpord.results._encode import CUT_NOTE, decode, encode, encode_event

text = st.text(max_size=40)
finite = st.floats(allow_nan=False, allow_infinity=False)
unit = st.floats(min_value=0, max_value=1)
count = st.integers(min_value=0, max_value=2**31)
json_leaf = st.none() | st.booleans() | st.integers(min_value=-(2**53), max_value=2**53) | finite | text
json_value = st.recursive(
    json_leaf, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4), max_leaves=12
)
# Usage as a record holds it: plausible numbers only (implausible ones read back as None, see
# test_implausible_usage_reads_back_as_unknown).
price = st.floats(min_value=0, max_value=1e6)
usage = st.fixed_dictionaries(
    {}, optional={"input_tokens": count, "output_tokens": count, "cost": st.none() | price}
)

assertions = st.builds(
    AssertionRecord,
    name=text,
    kind=st.sampled_from(["gate", "soft"]),
    status=st.sampled_from(["passed", "failed", "void", "error"]),
    score=unit,
    threshold=st.none() | unit,
    expected=json_value,
    actual=json_value,
    message=text,
    label=st.none() | text,
    scope=text,
)
judgments = st.builds(
    Judgment,
    name=text,
    model=st.none() | text,
    status=st.sampled_from(["passed", "failed", "void"]),
    choice=st.none() | text,
    score=st.none() | unit,
    threshold=st.none() | unit,
    reason=text,
    error=st.none() | text,
    usage=usage,
    cached=st.booleans(),
)
errors = st.builds(
    ErrorInfo,
    kind=st.sampled_from(["test", "agent", "harness", "sandbox", "validate", "internal", "task_exit"]),
    message=text,
    traceback=st.none() | text,
    where=st.none() | text,
)
trials = st.builds(
    TrialResult,
    case_id=text,
    variant=text,
    trial=count,
    verdict=st.sampled_from(["passed", "scored", "failed", "timed_out", "void", "skipped"]),
    reason=text,
    duration=st.floats(min_value=0, max_value=1e6),
    started_at=st.floats(min_value=0, max_value=4e9),
    assertions=st.lists(assertions, max_size=3),
    judgments=st.lists(judgments, max_size=2),
    score=st.none() | unit,
    error=st.none() | errors,
    logs=st.lists(text, max_size=3),
    usage=usage,
    tags=st.lists(text, max_size=3).map(tuple),
    file=st.none() | text,
    seed=st.none() | count,
    attempt=st.integers(min_value=0, max_value=3),
    host=st.none() | text,
    events=st.none() | st.builds(EventsRef, count, count, count),
    files=st.dictionaries(text, text, max_size=2),
)
summaries = st.builds(
    CellSummary,
    case_id=text, variant=text, trials=count, passed=count, scored=count, failed=count, timed_out=count,
    void=count, skipped=count, pass_rate=st.none() | unit, pass_at_k=st.none() | unit,
    pass_hat_k=st.none() | unit, deterministic=st.booleans(),
)
cells = st.builds(
    CellRecord, case_id=text, variant=text, trials=count, timeout=finite, file=st.none() | text,
    case_hash=st.none() | text, summary=st.none() | summaries,
)
runs = st.builds(
    RunRecord,
    run_id=text,
    status=st.sampled_from(["running", "finished", "interrupted", "crashed"]),
    started_at=finite,
    finished_at=st.none() | finite,
    argv=st.lists(text, max_size=3),
    evals_root=st.none() | text,
    versions=st.dictionaries(text, text, max_size=2),
    owner=st.dictionaries(text, json_leaf, max_size=3),
    executor=st.sampled_from(["local", "ray"]),
    config=st.dictionaries(text, json_value, max_size=3),
    options=st.dictionaries(text, json_value, max_size=3),
    variants=st.lists(st.dictionaries(text, json_value, max_size=3), max_size=2),
    cells=st.lists(cells, max_size=3),
    totals=st.dictionaries(text, count, max_size=3),
    usage=usage,
    exit_code=st.none() | st.integers(min_value=0, max_value=255),
    forced=st.booleans(),
    resumed_at=st.lists(finite, max_size=2),
    rerun_of=st.none() | text,
    note=st.none() | text,
)
events = st.builds(
    Event,
    type=text.filter(bool),
    data=st.dictionaries(text.filter(lambda k: k not in ("type", "ts")), json_value, max_size=4),
    ts=finite,
)


def through_the_file(data: dict[str, Any]) -> dict[str, Any]:
    """What reading back a written line gives."""
    decoded: dict[str, Any] = decode(encode(data))
    return decoded


@settings(max_examples=150)
@given(trials)
def test_a_trial_record_round_trips(record: TrialResult) -> None:
    assert TrialResult.from_dict(record.to_dict()) == record
    assert TrialResult.from_dict(through_the_file(record.to_dict())) == record
    assert TrialResult.from_dict(record.to_dict()).to_dict() == record.to_dict()


@settings(max_examples=100)
@given(runs)
def test_a_run_record_round_trips(record: RunRecord) -> None:
    assert RunRecord.from_dict(record.to_dict()) == record
    assert RunRecord.from_dict(through_the_file(record.to_dict())) == record


@settings(max_examples=100)
@given(st.one_of(assertions, judgments, errors, summaries, cells))
def test_nested_records_round_trip(record: Any) -> None:
    cls = type(record)
    assert cls.from_dict(record.to_dict()) == record
    assert cls.from_dict(through_the_file(record.to_dict())) == record


@settings(max_examples=150)
@given(events)
def test_an_event_round_trips(event: Event) -> None:
    assert Event.from_dict(event.to_dict()) == event
    assert Event.from_dict(through_the_file(event.to_dict())) == event


@settings(max_examples=300)
@given(st.text(max_size=12), finite, st.dictionaries(text, json_value, max_size=6))
def test_an_events_line_is_the_bytes_of_its_merged_dict(kind: str, ts: float, data: dict[str, Any]) -> None:
    # events.ndjson's lines are encoded from the event's own data, not from a merged dict.
    assert encode_event(kind, ts, data) == encode({"type": kind, "ts": ts, **data})


@pytest.mark.parametrize("data", [
    {},  # nothing to merge
    {"type": "theirs", "x": 1},  # the data names the line's own keys: the merged dict's answer
    {"ts": 5, "x": 1},
    {"big": 2**70, "set": {3}, 1: "int key", "nan": float("nan")},  # what orjson refuses
    {"text": "half an emoji \ud83d"},  # a lone surrogate
    {"deep": json.loads("[" * 400 + "]" * 400)},  # past what is read back: cut
])
def test_an_events_line_of_odd_data_is_what_encoding_the_merged_dict_writes(data: dict[Any, Any]) -> None:
    line = encode_event("span", 1.5, data)
    assert line == encode({"type": "span", "ts": 1.5, **data})
    back = decode(line)
    assert back["type"] == data.get("type", "span") and back["ts"] == data.get("ts", 1.5)
    if "deep" in data:
        assert CUT_NOTE in line.decode()


def test_the_encoder_writes_compact_json_that_the_standard_library_reads() -> None:
    record = TrialResult("a/b", "v", 0, "passed", usage={"cost": None}, tags=("x",))
    data = encode(record.to_dict())
    assert b"\n" not in data and json.loads(data) == record.to_dict()
    # Values JSON cannot hold take the artifact fallbacks instead of losing the record.
    odd = encode({"big": 2**70, "set": {3}, 1: "int key", "nan": float("nan")})
    assert json.loads(odd) == {"big": 2**70, "set": [3], "1": "int key", "nan": None}


def test_a_record_from_a_newer_format_is_refused_not_misread() -> None:
    line = TrialResult("a", "v", 0, "passed").to_dict()
    line["v"] = FORMAT_VERSION + 1
    with pytest.raises(RecordError, match=f"format {FORMAT_VERSION + 1} by a newer anpord"):
        TrialResult.from_dict(line)
    run = RunRecord("r", "finished", 0.0).to_dict()
    run["format"] = FORMAT_VERSION + 1
    with pytest.raises(RecordError, match="newer anpord"):
        RunRecord.from_dict(run)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"v": 1, "variant": "v", "trial": 0, "verdict": "passed"}, "missing field 'case_id'"),
        ({"v": 1, "case_id": "a", "variant": "v", "trial": 0, "verdict": "great"}, "unknown verdict"),
        ({"v": "one", "case_id": "a"}, "format version 'one' is not a number"),
        ([1, 2], "a JSON object"),
    ],
)
def test_a_malformed_trial_record_says_what_is_wrong(raw: Any, message: str) -> None:
    with pytest.raises(RecordError, match=message):
        TrialResult.from_dict(raw)


@given(st.sampled_from(["input_tokens", "output_tokens", "cost"]),
       st.sampled_from([float("inf"), float("nan"), -1, 1e30, 10**30, 1e308, True, "12"]))
def test_implausible_usage_reads_back_as_unknown(key: str, value: object) -> None:
    raw = TrialResult("a/b", "v", 0, "passed").to_dict() | {"usage": {key: value}}
    assert TrialResult.from_dict(raw).usage == {key: None}
