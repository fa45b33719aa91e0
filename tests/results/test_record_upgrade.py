"""Records of an older format are upgraded on read through one explicit hook per version; a
version with no hook and a newer one are refused, never misread."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anpord.results import FORMAT_VERSION, RecordError, TrialResult
from anpord.results._run_record import RunRecord
from anpord.results._upgrade import RUN_UPGRADES, TRIAL_UPGRADES, Upgrader


def format_1_line() -> dict[str, Any]:
    """A results.jsonl line as format 1 writes it."""
    record = TrialResult(case_id="weather/rain", variant="python:agents.kit:agent/default", trial=2,
                         verdict="failed", reason="expected umbrella", usage={"input_tokens": 12})
    line = json.loads(json.dumps(record.to_dict()))
    assert line["v"] == 1
    return line


def test_a_format_1_record_goes_through_each_hook_up_to_the_current_format() -> None:
    # A format 3 that renamed `reason` (format 2) and then split the case id (format 3).
    calls: list[int] = []

    def one_to_two(r: dict[str, Any]) -> dict[str, Any]:
        calls.append(r["v"])
        r["why"] = r.pop("reason")
        return r

    def two_to_three(r: dict[str, Any]) -> dict[str, Any]:
        calls.append(r["v"])
        r["suite"], _, r["case"] = r.pop("case_id").partition("/")
        return r

    upgrade = Upgrader("v", {1: one_to_two, 2: two_to_three}, current=3)
    raw = format_1_line()
    upgraded = upgrade(raw, "trial record")
    assert calls == [1, 2]  # each hook saw the version it upgrades from
    assert upgraded["v"] == 3 and (upgraded["suite"], upgraded["case"], upgraded["why"]) == (
        "weather", "rain", "expected umbrella")
    assert raw["v"] == 1 and "reason" in raw  # the record read is left as it was


def test_a_version_without_a_hook_and_a_newer_one_are_refused() -> None:
    upgrade = Upgrader("v", {2: lambda r: r}, current=3)
    with pytest.raises(RecordError, match="trial record was written in format 1, which this anpord cannot upgrade to format 3"):
        upgrade(format_1_line(), "trial record")
    with pytest.raises(RecordError, match="format 4 by a newer anpord"):
        upgrade({**format_1_line(), "v": 4}, "trial record")
    with pytest.raises(RecordError, match="format version '1' is not a number"):
        upgrade({**format_1_line(), "v": "1"}, "trial record")


def test_the_reader_upgrades_through_the_registered_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    # The read path (TrialResult.from_dict, RunRecord.from_dict) runs the module's hooks: a
    # record of format 0 is read once a 0 -> 1 hook exists, and refused while none does.
    line = {**format_1_line(), "v": 0}
    line["outcome"] = line.pop("verdict")
    with pytest.raises(RecordError, match="format 0, which this anpord cannot upgrade"):
        TrialResult.from_dict(line)

    def zero_to_one(r: dict[str, Any]) -> dict[str, Any]:
        r["verdict"] = r.pop("outcome")
        return r

    monkeypatch.setitem(TRIAL_UPGRADES, 0, zero_to_one)
    read = TrialResult.from_dict(line)
    assert (read.case_id, read.verdict, read.reason) == ("weather/rain", "failed", "expected umbrella")
    assert read.to_dict()["v"] == FORMAT_VERSION

    run = {"format": 0, "run_id": "20260101-000000-aaaaaa", "status": "finished", "started_at": 1.0}
    with pytest.raises(RecordError, match="run.json was written in format 0"):
        RunRecord.from_dict(run)
    monkeypatch.setitem(RUN_UPGRADES, 0, lambda r: r)
    assert RunRecord.from_dict(run).run_id == "20260101-000000-aaaaaa"


def test_current_records_are_read_as_they_are(tmp_path: Path) -> None:
    line = format_1_line()
    assert TrialResult.from_dict(line).to_dict() == line
