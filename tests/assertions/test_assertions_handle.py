"""AssertionHandle and Recorder semantics."""

from __future__ import annotations

import pytest

from anpord.assertions import AssertionHandle, AssertionRecord, GateFailed, Recorder, check_value
from anpord.expect import equals, includes, satisfies, similarity


def rec(
    score: float, status: str = "passed", kind: str = "gate", threshold: float | None = 1.0
) -> AssertionRecord:
    return AssertionRecord(name="x", kind=kind, status=status, score=score, threshold=threshold)  # type: ignore[arg-type]


def test_gate_redecides_from_score() -> None:
    h = AssertionHandle(rec(0.7, status="failed"))
    assert h.gate(0.6) is h
    assert h.record.kind == "gate" and h.record.threshold == 0.6 and h.passed
    h.gate()
    assert h.record.threshold == 1.0 and h.status == "failed"


def test_soft_without_threshold_always_passes() -> None:
    h = AssertionHandle(rec(0.0, status="failed"))
    h.soft()
    assert h.record.kind == "soft" and h.record.threshold is None and h.status == "passed"


def test_soft_with_threshold_misses_below() -> None:
    h = AssertionHandle(rec(0.5))
    h.soft(0.8)
    assert h.status == "failed" and h.record.kind == "soft"
    h.soft(0.5)
    assert h.status == "passed"


def test_at_least_is_soft_threshold() -> None:
    h = AssertionHandle(rec(0.59)).at_least(0.6)
    assert h.record.kind == "soft" and h.record.threshold == 0.6 and h.status == "failed"


def test_float_noise_does_not_miss() -> None:
    h = AssertionHandle(rec(0.1 + 0.2)).gate(0.3)
    assert h.passed


def test_label_chains() -> None:
    h = AssertionHandle(rec(1.0)).label("forecast mentions sun").soft(0.5)
    assert h.record.label == "forecast mentions sun"
    assert h.record.display_name == "forecast mentions sun"


@pytest.mark.parametrize("status", ["error", "void"])
def test_error_and_void_never_pass(status: str) -> None:
    h = AssertionHandle(rec(1.0, status=status))
    h.soft()
    assert h.status == status
    h.gate(0)
    assert h.status == status
    h.at_least(0.0)
    assert h.status == status and not h.passed


def test_bad_thresholds_are_refused() -> None:
    h = AssertionHandle(rec(1.0))
    with pytest.raises(ValueError):
        h.gate(2)
    with pytest.raises(TypeError):
        h.soft("high")  # type: ignore[arg-type]


def test_settle_fills_a_pending_check() -> None:
    h = AssertionHandle(rec(0.0, status="void", kind="soft", threshold=None)).at_least(0.6)
    assert h.status == "void"
    h._settle(0.7, message="judge said partial")
    assert h.status == "passed" and h.score == 0.7 and h.message == "judge said partial"
    h._settle(0.5)
    assert h.status == "failed"
    h._settle(status="void", message="judge could not answer")
    assert h.status == "void"


def test_recorder_collects_in_order() -> None:
    r = Recorder()
    assert not r.checked
    a = r.record(rec(1.0))
    b = r.check("Sunny", includes("Rain"))
    assert r.checked and len(r) == 2
    assert r.records == [a.record, b.record]
    assert list(r) == r.records


def test_check_value_plain_value_is_equals() -> None:
    assert check_value({"a": 1}, {"a": 1}).status == "passed"
    r = check_value({"a": 1, "b": 2}, {"a": 1})
    assert r.status == "failed" and "unexpected key(s) 'b'" in r.message
    assert r.name == 'equals({"a": 1})' and r.kind == "gate"


def test_check_value_records_what_was_seen() -> None:
    r = check_value("Cloudy", includes("Sunny"), scope="turn 2")
    assert r.status == "failed" and r.score == 0.0 and r.scope == "turn 2"
    assert r.actual == "Cloudy" and '"Cloudy"' in r.message
    assert r.expected == 'includes("Sunny")'


def test_check_value_similarity_is_soft() -> None:
    r = check_value("sitting", similarity("kitten"))
    assert r.kind == "soft" and r.status == "passed" and r.threshold is None
    assert r.score == pytest.approx(4 / 7)
    r = check_value("sitting", similarity("kitten", threshold=0.8))
    assert r.kind == "soft" and r.status == "failed"


def test_similarity_threshold_set_later_keeps_the_evidence() -> None:
    h = Recorder().check("sitting", similarity("kitten")).at_least(0.8)
    assert h.status == "failed"
    assert 'similarity 0.571 to "kitten", saw "sitting"' in h.message


def test_similarity_made_a_gate() -> None:
    r = Recorder()
    h = r.check("sitting", similarity("kitten")).gate(0.5)
    assert h.passed and h.record.kind == "gate"
    assert not h.gate(0.9).passed


def test_raising_matcher_is_an_error_even_when_soft() -> None:
    r = Recorder()
    h = r.check("x", satisfies(lambda v: 1 / 0, "divides"))
    assert h.status == "error" and "ZeroDivisionError" in h.message
    h.soft()
    assert h.status == "error"


def test_matcher_whose_evaluate_raises_is_an_error() -> None:
    class Broken:
        name = "broken"
        description = "broken()"
        default_kind = "gate"
        default_threshold = 1.0

        def evaluate(self, actual: object) -> object:
            raise RuntimeError("kaput")

    r = check_value("x", Broken())
    assert r.status == "error" and "kaput" in r.message


def test_long_actual_is_clipped() -> None:
    r = check_value("y" * 10_000, includes("x"))
    assert len(r.actual) < 4100 and "… (+" in r.actual


def test_require_raises_gate_failed() -> None:
    r = Recorder()
    assert r.require("abc", equals("abc")).passed
    with pytest.raises(GateFailed) as info:
        r.require("abd", equals("abc"))
    assert info.value.record is r.records[-1]
    assert "abd" in str(info.value)


def test_require_turns_a_soft_matcher_into_a_gate() -> None:
    r = Recorder()
    h = r.require("sitting", similarity("kitten", threshold=0.5))
    assert h.record.kind == "gate" and h.record.threshold == 0.5 and h.passed
    with pytest.raises(GateFailed):
        r.require("sitting", similarity("kitten"))  # no threshold: a gate at 1


def test_add_records_a_decided_gate() -> None:
    r = Recorder()
    assert r.add("assert x == 1", True).passed
    h = r.add("assert x == 1", False, "assert 2 == 1", scope="run", actual=2)
    assert h.status == "failed" and h.message == "assert 2 == 1" and h.record.actual == 2
    assert r.add("validate()", True, error=True).status == "error"
    v = r.add("pytest -q", True, "no tests ran", void=True)
    assert v.status == "void" and v.soft().status == "void"
    assert [rec.kind for rec in r] == ["gate", "gate", "gate", "soft"]
