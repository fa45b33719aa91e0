"""JUnit XML: written, parsed back and checked structurally."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from results_factories import gate_failure, soft_miss, summary_for, trial

from anpord.results import write_junit


def results() -> list:
    return [
        trial(
            "weather/sunny", "passed", "small", 0, duration=0.5, file="evals/weather/sunny.eval.py"
        ),
        trial("weather/sunny", "passed", "small", 1, duration=0.25),
        trial(
            "weather/rain",
            "failed",
            "small",
            0,
            reason="reply did not include 'Sunny'",
            assertions=[
                gate_failure("message_includes", "Sunny", "Rain", "reply did not include 'Sunny'")
            ],
            artifact="trials/weather/rain/small/0.json",
        ),
        trial("weather/slow", "timed_out", "large", 0, reason="timed out after 30s"),
        trial("weather/judge", "void", "large", 0, reason="judge could not answer"),
        trial("weather/later", "skipped", "large", 0, reason="needs an API key"),
        trial(
            "weather/tone",
            "scored",
            "large",
            0,
            score=0.62,
            assertions=[soft_miss("similarity", 0.62, 0.8)],
            logs=["thinking"],
        ),
    ]


def write(tmp_path: Path, strict: bool = False, rs: list | None = None) -> ET.Element:
    rs = results() if rs is None else rs
    path = tmp_path / "junit.xml"
    write_junit(path, summary_for(rs), rs, strict=strict)
    return ET.parse(path).getroot()


def counts_match(el: ET.Element, cases: list[ET.Element]) -> None:
    assert int(el.get("tests", "-1")) == len(cases)
    assert int(el.get("failures", "-1")) == sum(1 for c in cases if c.find("failure") is not None)
    assert int(el.get("errors", "-1")) == sum(1 for c in cases if c.find("error") is not None)
    assert int(el.get("skipped", "-1")) == sum(1 for c in cases if c.find("skipped") is not None)


def test_structure_and_counts_add_up(tmp_path: Path) -> None:
    root = write(tmp_path)
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["small", "large"]
    for suite in suites:
        counts_match(suite, suite.findall("testcase"))
    counts_match(root, root.findall("./testsuite/testcase"))
    assert root.get("tests") == "7" and root.get("failures") == "2"
    assert root.get("errors") == "1" and root.get("skipped") == "1"


def test_one_testcase_per_trial_named_by_case_variant_and_trial(tmp_path: Path) -> None:
    root = write(tmp_path)
    small = root.find("testsuite[@name='small']")
    assert small is not None
    names = [(c.get("classname"), c.get("name")) for c in small.findall("testcase")]
    assert names == [
        ("weather/sunny", "weather/sunny [small] #0"),
        ("weather/sunny", "weather/sunny [small] #1"),
        ("weather/rain", "weather/rain [small] #0"),
    ]
    first = small.find("testcase")
    assert first is not None and first.get("time") == "0.500"
    assert first.get("file") == "evals/weather/sunny.eval.py"


def by_name(root: ET.Element, name: str) -> ET.Element:
    found = root.find(f".//testcase[@name='{name}']")
    assert found is not None, name
    return found


def test_verdicts_map_to_failure_error_and_skipped(tmp_path: Path) -> None:
    root = write(tmp_path)
    rain = by_name(root, "weather/rain [small] #0")
    failure = rain.find("failure")
    assert failure is not None
    assert failure.get("type") == "failed"
    assert failure.get("message") == "reply did not include 'Sunny'"
    assert "expected: 'Sunny'" in (failure.text or "") and "actual:   'Rain'" in (
        failure.text or ""
    )
    slow = by_name(root, "weather/slow [large] #0").find("failure")
    assert slow is not None and slow.get("type") == "timed_out"
    error = by_name(root, "weather/judge [large] #0").find("error")
    assert error is not None and error.get("message") == "judge could not answer"
    skipped = by_name(root, "weather/later [large] #0").find("skipped")
    assert skipped is not None and skipped.get("message") == "needs an API key"
    passed = by_name(root, "weather/sunny [small] #0")
    assert [child.tag for child in passed] == ["properties"]
    verdict = passed.find("properties/property[@name='verdict']")
    assert verdict is not None and verdict.get("value") == "passed"
    traceback = rain.find("properties/property[@name='traceback']")
    assert traceback is not None and traceback.get("value") == "trials/weather/rain/small/0.json"


def test_scored_passes_with_its_score_unless_strict(tmp_path: Path) -> None:
    tone = by_name(write(tmp_path), "weather/tone [large] #0")
    assert tone.find("failure") is None
    score = tone.find("properties/property[@name='score']")
    assert score is not None and score.get("value") == "0.6200"
    out = tone.findtext("system-out") or ""
    assert "similarity: score 0.62 < 0.80" in out and "thinking" in out

    root = write(tmp_path, strict=True)
    failure = by_name(root, "weather/tone [large] #0").find("failure")
    assert failure is not None and failure.get("type") == "scored"
    assert root.get("failures") == "3"
    counts_match(root, root.findall("./testsuite/testcase"))


def test_text_is_escaped_and_forbidden_characters_are_dropped(tmp_path: Path) -> None:
    nasty = 'a <b> & "c" \x00\x07\x1b ]]> \ud800 é'
    rs = [
        trial(
            "c<&>",
            "failed",
            reason=nasty,
            logs=[nasty],
            assertions=[gate_failure("eq", nasty, nasty)],
        )
    ]
    root = write(tmp_path, rs=rs)  # parses: nothing XML 1.0 forbids got through
    case = root.find(".//testcase")
    assert case is not None and case.get("classname") == "c<&>"
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == 'a <b> & "c" \ufffd\ufffd\ufffd ]]> \ufffd é'


def test_written_atomically_without_leftovers(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text("old")
    rs = results()
    write_junit(path, summary_for(rs), rs)
    assert path.read_bytes().startswith(b"<?xml")
    assert sorted(os.listdir(tmp_path)) == ["junit.xml"]


def test_missing_folder_is_a_one_line_value_error(tmp_path: Path) -> None:
    rs = results()
    with pytest.raises(ValueError) as info:
        write_junit(tmp_path / "nope" / "junit.xml", summary_for(rs), rs)
    assert "does not exist" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ValueError):
        write_junit(tmp_path, summary_for(rs), rs)


def test_empty_run_is_valid(tmp_path: Path) -> None:
    root = write(tmp_path, rs=[])
    assert root.get("tests") == "0" and root.findall("testsuite") == []


def test_suites_and_testcases_carry_pass_rates_with_intervals(tmp_path: Path) -> None:
    root = write(tmp_path)
    small = root.find("testsuite[@name='small']")
    assert small is not None

    def props(el: ET.Element) -> dict[str, str]:
        found = el.find("properties")
        assert found is not None
        return {p.get("name", ""): p.get("value", "") for p in found.findall("property")}

    # small: sunny 2/2, rain 0/1 — the mean of per-case rates, not the pooled 2/3.
    suite = props(small)
    assert suite["pass_rate"] == "0.5000" and suite["cases"] == "2"
    assert float(suite["ci_low"]) == 0.0 and float(suite["ci_high"]) == 1.0
    assert suite["void_rate"] == "0.0000"
    sunny = props(by_name(root, "weather/sunny [small] #0"))
    assert (sunny["cell_pass_rate"], sunny["cell_n"]) == ("1.0000", "2")
    assert sunny["cell_ci_low"] == "0.3424" and sunny["cell_ci_high"] == "1.0000"
    # A cell that measured nothing has no interval: the properties are left out.
    judge = props(by_name(root, "weather/judge [large] #0"))
    assert "cell_ci_low" not in judge and judge["cell_n"] == "0"
