"""Which span is which event, under each convention's attribute names (current GenAI, deprecated
GenAI, OpenInference, Traceloop), and the bad values a Variant refuses."""

from __future__ import annotations

from typing import Any

import pytest

from anpord.authoring import Variant
from anpord.traces import Span, span_events


def _span(name: str, attrs: dict[str, Any], status: str = "unset", **kw: Any) -> Span:
    return Span("ab" * 16, "01" * 8, "02" * 8, name, 1, 10.0, 10.5, status, attributes=attrs, **kw)


@pytest.mark.parametrize("attrs", [
    {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "c1",
     "gen_ai.tool.call.arguments": '{"city": "Oslo"}', "gen_ai.tool.call.result": '{"t": -3}'},
    {"openinference.span.kind": "TOOL", "tool.name": "get_weather", "tool_call.id": "c1",
     "input.value": '{"city": "Oslo"}', "output.value": '{"t": -3}'},
    {"traceloop.span.kind": "tool", "traceloop.entity.name": "get_weather", "tool.call.id": "c1",
     "traceloop.entity.input": '{"city": "Oslo"}', "traceloop.entity.output": '{"t": -3}'},
], ids=["genai", "openinference", "traceloop"])
def test_a_tool_span_is_a_tool_call_in_every_convention(attrs: dict[str, Any]) -> None:
    called, result = span_events(_span("whatever", attrs))
    assert (called.type, result.type) == ("tool.called", "tool.result")
    assert called.data["name"] == result.data["name"] == "get_weather"
    assert called.data["call_id"] == result.data["call_id"] == "c1"
    assert called.data["input"] == {"city": "Oslo"} and result.data["output"] == {"t": -3}
    assert result.data["status"] == "completed" and result.data["error"] is None
    assert (called.ts, result.ts) == (10.0, 10.5)


def test_a_tool_named_only_by_its_span_name_with_text_output_and_an_exception() -> None:
    span = _span("execute_tool search", {"gen_ai.tool.call.result": "no results"}, "error",
                 events=[("exception", {"exception.type": "TimeoutError", "exception.message": "slow"})])
    called, result = span_events(span)
    assert called.data["name"] == "search" and called.data["call_id"] == "01" * 8
    assert result.data["output"] == "no results"  # not JSON: kept as text
    assert (result.data["status"], result.data["error"]) == ("failed", "TimeoutError: slow")


@pytest.mark.parametrize("attrs", [
    {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.response.model": "gpt-4o",
     "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2},
    {"gen_ai.operation.name": "text_completion", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
     "gen_ai.usage.prompt_tokens": 10, "gen_ai.usage.completion_tokens": 2},
    {"openinference.span.kind": "LLM", "llm.provider": "openai", "llm.model_name": "gpt-4o",
     "llm.token_count.prompt": 10, "llm.token_count.completion": 2},
    {"llm.request.type": "chat", "llm.system": "openai", "llm.request.model": "gpt-4o",
     "llm.usage.prompt_tokens": "10", "llm.usage.completion_tokens": "2"},
], ids=["genai", "deprecated-genai", "openinference", "traceloop"])
def test_a_model_span_is_a_model_call_with_usage(attrs: dict[str, Any]) -> None:
    (event,) = span_events(_span("llm call", attrs))
    assert event.type == "model.called" and event.data["source"] == "trace"
    assert (event.data["provider"], event.data["model"]) == ("openai", "gpt-4o")
    assert (event.data["input_tokens"], event.data["output_tokens"]) == (10, 2)
    assert event.data["latency"] == 0.5 and event.data["status"] == "completed"
    assert abs(event.data["cost"] - (10 * 2.5 + 2 * 10) / 1e6) < 1e-12  # gpt-4o's listed price


def test_a_model_call_of_a_model_without_a_listed_price_has_no_cost() -> None:
    (event,) = span_events(_span("chat", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "my-own",
                                          "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2}))
    assert event.data["cost"] is None and event.data["input_tokens"] == 10


def test_cached_input_is_charged_at_the_cached_rate() -> None:
    (event,) = span_events(_span("chat", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                                          "gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 10,
                                          "gen_ai.usage.cache_read.input_tokens": "800"}))
    assert abs(event.data["cost"] - (200 * 2.5 + 800 * 1.25 + 10 * 10) / 1e6) < 1e-12


def test_a_price_registered_after_a_models_first_span_prices_the_next() -> None:
    import anpord.models._pricing as pricing

    attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "late-priced-model",
             "gen_ai.usage.input_tokens": 1_000_000, "gen_ai.usage.output_tokens": 0}
    assert span_events(_span("chat", attrs))[0].data["cost"] is None
    pricing.register_price("late-priced-model", input=1.0, output=2.0)
    try:
        assert span_events(_span("chat", attrs))[0].data["cost"] == 1.0
    finally:
        pricing._registered.pop("late-priced-model", None)


def test_other_spans_keep_name_attributes_timing_and_parent() -> None:
    (event,) = span_events(_span("invoke_agent planner", {"gen_ai.operation.name": "invoke_agent", "n": 3}))
    assert event.type == "span"
    d = event.data
    assert (d["name"], d["operation"], d["attributes"]["n"], d["start"], d["end"]) == (
        "invoke_agent planner", "invoke_agent", 3, 10.0, 10.5)
    assert (d["span_id"], d["parent_span_id"], d["trace_id"]) == ("01" * 8, "02" * 8, "ab" * 16)


@pytest.mark.parametrize("value", ["jaeger", True, ""])
def test_a_variant_refuses_an_unknown_traces_value(value: Any) -> None:
    with pytest.raises(ValueError, match="traces= must be 'otlp' or None"):
        Variant(traces=value)


@pytest.mark.parametrize("attrs", [
    {"gen_ai.operation.name": "chat", "gen_ai.usage.prompt_tokens": 99, "gen_ai.usage.input_tokens": 10,
     "gen_ai.system": "old", "gen_ai.provider.name": "new"},
    {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 10, "gen_ai.usage.prompt_tokens": 99,
     "gen_ai.provider.name": "new", "gen_ai.system": "old"},
], ids=["deprecated-first", "current-first"])
def test_the_current_name_wins_over_a_deprecated_one_in_any_order(attrs: dict[str, Any]) -> None:
    (event,) = span_events(_span("chat", attrs))
    assert (event.data["input_tokens"], event.data["provider"]) == (10, "new")


def test_an_empty_current_name_falls_back_to_a_deprecated_one() -> None:
    (event,) = span_events(_span("chat", {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "",
                                          "gen_ai.system": "openai", "gen_ai.usage.input_tokens": None,
                                          "gen_ai.usage.prompt_tokens": 4}))
    assert (event.data["provider"], event.data["input_tokens"]) == ("openai", 4)


def test_tool_arguments_json_reads_past_what_orjson_reads() -> None:
    called, _ = span_events(_span("execute_tool t", {"gen_ai.operation.name": "execute_tool",
                                                     "gen_ai.tool.call.arguments": '{"n": 123456789012345678901234567890, "x": NaN}'}))
    assert called.data["input"]["n"] == 123456789012345678901234567890
    assert called.data["input"]["x"] != called.data["input"]["x"]  # NaN, as json reads it
