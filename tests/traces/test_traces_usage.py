"""Usage is chosen per model call: a traced call counts in the trial's totals only when neither the
harness nor the model proxy reported that call (same response id; else same model and time). A
Python agent run end to end: test_traces_python.py."""

from __future__ import annotations

from typing import Any

from anpord.events import MODEL_CALLED, USAGE, Event, usage_events
from anpord.runner._trial import _usage


def _traced(start: float, end: float, tokens: int, model: str = "m1", **extra: Any) -> Event:
    return Event(MODEL_CALLED, {"source": "trace", "model": model, "input_tokens": tokens, "output_tokens": 1,
                                "cost": None, "start": start, "end": end, **extra}, end)


def _report(ts: float, tokens: int, **extra: Any) -> Event:
    return Event(USAGE, {"input_tokens": tokens, "output_tokens": 1, "cost": None, **extra}, ts)


def _proxy(start: float, end: float, tokens: int, model: str = "m1", **extra: Any) -> Event:
    return Event(MODEL_CALLED, {"model": model, "input_tokens": tokens, "output_tokens": 1, "cost": None,
                                "start": start, "end": end, **extra}, end)


def _tokens(events: list[Event]) -> float | None:
    return _usage(events)[0]["input_tokens"]


def test_a_traced_call_the_harness_did_not_report_counts_beside_the_reported_ones() -> None:
    events = [_traced(10.0, 11.0, 7), _report(11.0, 1000), _traced(12.0, 13.0, 5)]
    assert _tokens(events) == 1005  # the first call is the harness's; the second only the trace's


def test_a_report_made_inside_the_span_or_covering_several_calls_stands_for_them() -> None:
    inside = [_traced(10.0, 11.0, 7), _report(10.5, 100)]
    assert _tokens(inside) == 100
    total = [_traced(10.0, 11.0, 7), _traced(12.0, 13.0, 5), _report(14.0, 300)]
    assert _tokens(total) == 300  # one total at the end of the turn: not added to


def test_a_report_of_another_model_or_another_session_does_not_stand_for_the_call() -> None:
    other_model = [_traced(10.0, 11.0, 7, model="m1"), _report(11.0, 100, model="m2")]
    assert _tokens(other_model) == 107
    dated = [_traced(10.0, 11.0, 7, model="gpt-4o"), _report(11.0, 100, model="gpt-4o-2024-08-06")]
    assert _tokens(dated) == 100
    sessions = [_traced(10.0, 11.0, 7, session_id="a"), _report(11.0, 100, session_id="b")]
    assert _tokens(sessions) == 107


def test_a_response_id_decides_before_time() -> None:
    # The report comes long before the span started (a clock apart): its response id names the call.
    events = [_report(1.0, 100, response_id="r1"), _traced(10.0, 11.0, 7, response_id="r1"),
              _traced(12.0, 13.0, 5, response_id="r2")]
    assert _tokens(events) == 100 + 5


def test_a_judges_usage_never_stands_for_the_agents_call() -> None:
    events = [_traced(10.0, 11.0, 7), _report(20.0, 50, source="judge", model="m1")]
    assert _tokens(events) == 57


def test_each_proxy_call_stands_for_one_span_that_overlaps_it() -> None:
    events = [_traced(10.0, 11.0, 7), _traced(10.2, 11.2, 5), _proxy(10.1, 10.9, 70)]
    # The proxy's one call stands for one of the two concurrent spans; the other is the trace's.
    assert _tokens(events) == 70 + 5
    later = [_traced(10.0, 11.0, 7), _proxy(20.0, 21.0, 70)]
    assert _tokens(later) == 77
    by_id = [_traced(10.0, 11.0, 7, response_id="x"), _proxy(30.0, 31.0, 70, response_id="x")]
    assert _tokens(by_id) == 70


def test_without_other_reports_every_traced_call_counts() -> None:
    events = [_traced(10.0, 11.0, 7), _traced(12.0, 13.0, 5)]
    assert usage_events(events) == events
    assert _tokens(events) == 12

