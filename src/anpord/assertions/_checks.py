"""The scoped assertions as pure functions over events, turn statuses and output.

Each returns an ``Outcome``; ``_scoped.ScopedAssertions`` turns it into a recorded assertion. On a
miss the message says what was seen (the tools that were called, the events of that type, …).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..events import (
    COMMAND_COMPLETED,
    MESSAGE_COMPLETED,
    SESSION_FAILED,
    TOOL_RESULT,
    TURN_FAILED,
    Event,
)
from ..expect import Match, match_detail
from .._render import clip, describe, preview, render
from ._tools import ToolCall, tool_calls_from_events

# How many seen items a message lists before "… and N more".
SHOW_ITEMS = 8


@dataclass(slots=True)
class Outcome:
    ok: bool
    message: str = ""
    expected: Any = None
    actual: Any = None
    error: str | None = None  # a user function raised: the assertion is an error


Count = int | Callable[[int], Any] | None


# ---------------------------------------------------------------------------------------------
# Rendering what was seen.


def _listing(items: Sequence[str], limit: int = SHOW_ITEMS) -> str:
    shown = "; ".join(items[:limit])
    more = len(items) - limit
    return f"{shown}; … and {more} more" if more > 0 else shown


def show_call(call: ToolCall) -> str:
    text = f"{call.name}({preview(call.input, 160) if call.input is not None else ''}) → {call.status}"
    if call.status == "failed" and call.error:
        text += f" ({clip(call.error, 120)})"
    return text


def _calls_seen(calls: Sequence[ToolCall]) -> str:
    if not calls:
        return "no tools were called"
    return f"tools called: {_listing([show_call(c) for c in calls])}"


def _show_event(ev: Event) -> str:
    return f"{ev.type} {preview(dict(ev.data), 200)}"


def _types_seen(events: Sequence[Event]) -> str:
    if not events:
        return "no events were seen"
    counts = Counter(ev.type for ev in events)
    return "event types seen: " + ", ".join(f"{t} ×{n}" for t, n in counts.items())


def _call_summary(call: ToolCall) -> dict[str, Any]:
    return {"name": call.name, "input": call.input, "status": call.status}


def _times(n: int) -> str:
    return "1 time" if n == 1 else f"{n} times"


# ---------------------------------------------------------------------------------------------
# Counting: an int is exact, a predicate decides, None means "at least one".


def _count_ok(count: Count, n: int) -> Match:
    if count is None:
        return Match(n >= 1, "expected at least one")
    if isinstance(count, bool) or not (isinstance(count, int) or callable(count)):
        err = f"count must be an int or a predicate on the number of matches, not {count!r}"
        return Match(False, err, err)
    if isinstance(count, int):
        if count < 0:
            err = f"count must be 0 or more, not {count}"
            return Match(False, err, err)
        return Match(n == count, f"expected exactly {count}")
    return match_detail(count, n)


def _describe_count(count: Count) -> Any:
    return None if count is None else describe(count)


# ---------------------------------------------------------------------------------------------
# Turns.


def succeeded(statuses: Sequence[str], events: Sequence[Event]) -> Outcome:
    statuses = list(statuses)
    if not statuses:
        return Outcome(False, "no turn settled (nothing was sent?)", "a settled turn", statuses)
    failed = [i for i, s in enumerate(statuses, 1) if s == "failed"]
    if not failed:
        return Outcome(True, "", "no failed turn", statuses)
    errors = [
        str(ev.data.get("error"))
        for ev in events
        if ev.type == TURN_FAILED and ev.data.get("error")
    ]
    which = ", ".join(map(str, failed))
    detail = f": {_listing([clip(e, 200) for e in errors], 3)}" if errors else ""
    return Outcome(
        False,
        f"turn {which} of {len(statuses)} failed{detail} (statuses: {', '.join(statuses)})",
        "no failed turn",
        statuses,
    )


def parked(statuses: Sequence[str], events: Sequence[Event]) -> Outcome:
    statuses = list(statuses)
    if not statuses:
        return Outcome(False, "no turn settled (nothing was sent?)", "waiting", statuses)
    last = statuses[-1]
    if last == "waiting":
        return Outcome(True, "", "waiting", last)
    return Outcome(False, f"the last turn ended {last}, not waiting on input", "waiting", last)


# ---------------------------------------------------------------------------------------------
# Messages.


def assistant_texts(events: Sequence[Event]) -> list[str]:
    return [
        str(ev.data.get("text") or "")
        for ev in events
        if ev.type == MESSAGE_COMPLETED and ev.data.get("role", "assistant") == "assistant"
    ]


def message_includes(events: Sequence[Event], needle: Any) -> Outcome:
    texts = assistant_texts(events)
    if isinstance(needle, str):
        hit = any(needle in text for text in texts)
        wanted = preview(needle, 120)
    elif isinstance(needle, re.Pattern):
        hit = any(needle.search(text) for text in texts)
        wanted = f"a match for /{needle.pattern}/"
    else:
        err = f"message_includes takes a string or a compiled regex, not {type(needle).__name__}"
        return Outcome(False, err, describe(needle), None, err)
    expected = describe(needle)
    if hit:
        return Outcome(True, "", expected, None)
    if not texts:
        return Outcome(False, f"no assistant message was seen (wanted {wanted})", expected, [])
    seen = _listing([preview(t, 200) for t in texts], 5)
    return Outcome(
        False, f"no assistant message includes {wanted}; messages: {seen}", expected, texts[-5:]
    )


# ---------------------------------------------------------------------------------------------
# Tools.

_TOOL_STEP_KEYS = frozenset({"name", "input", "output", "status"})


def _tool_filters(step: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [(key, step[key]) for key in ("input", "output", "status") if step.get(key) is not None]


def _match_call(call: ToolCall, name: Any, filters: list[tuple[str, Any]]) -> Match:
    m = match_detail(name, call.name)
    if not m.ok:
        return Match(False, f"name {m.why}", m.error)
    for key, expected in filters:
        m = match_detail(expected, getattr(call, key))
        if not m.ok:
            return Match(False, f"{key}: {m.why}", m.error)
    return Match(True)


def called_tool(
    events: Sequence[Event],
    name: Any,
    *,
    input: Any = None,
    output: Any = None,
    status: str | None = None,
    count: Count = None,
) -> Outcome:
    calls = tool_calls_from_events(events)
    filters = [
        (k, v)
        for k, v in (("input", input), ("output", output), ("status", status))
        if v is not None
    ]
    expected = {
        "name": describe(name),
        **{k: describe(v) for k, v in filters},
        "count": _describe_count(count),
    }
    actual = [_call_summary(c) for c in calls]
    hits: list[ToolCall] = []
    misses: list[str] = []  # why each call of that name did not match
    for call in calls:
        m = _match_call(call, name, filters)
        if m.error:
            return Outcome(False, m.error, expected, actual, m.error)
        if m.ok:
            hits.append(call)
        elif not m.why.startswith("name"):
            misses.append(f"call {call.name}({preview(call.input, 120)}) {m.why}")
    c = _count_ok(count, len(hits))
    if c.error:
        return Outcome(False, c.error, expected, actual, c.error)
    if c.ok:
        return Outcome(True, "", expected, actual)
    label = name if isinstance(name, str) else render(name)
    wanted = "".join(f" {k}={render(v, 120)}" for k, v in filters)
    if not hits and not misses:
        message = f"{label} was not called; {_calls_seen(calls)}"
    elif not hits:
        message = (
            f"{label} was called {_times(len(misses))} but none matched{wanted}: "
            f"{_listing(misses, 3)}; {_calls_seen(calls)}"
        )
    else:
        message = f"{label} matched {_times(len(hits))}, {c.why}; {_calls_seen(calls)}"
        if misses:
            message += f"; non-matching calls: {_listing(misses, 3)}"
    return Outcome(False, message, expected, actual)


def not_called_tool(events: Sequence[Event], name: Any) -> Outcome:
    calls = tool_calls_from_events(events)
    hits: list[ToolCall] = []
    for call in calls:
        m = match_detail(name, call.name)
        if m.error:
            return Outcome(False, m.error, describe(name), None, m.error)
        if m.ok:
            hits.append(call)
    actual = [_call_summary(c) for c in hits]
    if not hits:
        return Outcome(True, "", {"not": describe(name)}, actual)
    label = name if isinstance(name, str) else render(name)
    shown = _listing([show_call(c) for c in hits])
    return Outcome(
        False, f"{label} was called {_times(len(hits))}: {shown}", {"not": describe(name)}, actual
    )


def _in_order(items: Sequence[Any], steps: Sequence[Any], match: Callable[[Any, Any], Any]) -> tuple[int | None, str | None]:
    """Walk ``items`` once, finding each step after the one before it (a subsequence).
    Returns the 1-based number of the first step not found, or the error a matcher raised."""
    pos = 0
    for i, step in enumerate(steps, 1):
        while pos < len(items):
            m = match(items[pos], step)
            pos += 1
            if m.error:
                return None, m.error
            if m.ok:
                break
        else:
            return i, None
    return None, None


def tool_order(events: Sequence[Event], steps: Sequence[Any]) -> Outcome:
    calls = tool_calls_from_events(events)
    expected = describe(list(steps))
    actual = [c.name for c in calls]
    parsed: list[tuple[Any, list[tuple[str, Any]]]] = []
    for i, step in enumerate(steps, 1):
        if isinstance(step, Mapping):
            unknown = set(step) - _TOOL_STEP_KEYS
            if "name" not in step or unknown:
                err = f"tool_order step {i} needs a 'name' and only {sorted(_TOOL_STEP_KEYS)}, got {sorted(step)}"
                return Outcome(False, err, expected, actual, err)
            parsed.append((step["name"], _tool_filters(step)))
        else:
            parsed.append((step, []))
    missing, error = _in_order(calls, parsed, lambda call, step: _match_call(call, *step))
    if error:
        return Outcome(False, error, expected, actual, error)
    if missing is not None:
        step_text = render(steps[missing - 1], 160)
        return Outcome(
            False,
            f"step {missing} of {len(parsed)} ({step_text}) was not called after the steps before it; "
            f"{_calls_seen(calls)}",
            expected,
            actual,
        )
    return Outcome(True, "", expected, actual)


def used_no_tools(events: Sequence[Event]) -> Outcome:
    calls = tool_calls_from_events(events)
    if not calls:
        return Outcome(True, "", 0, 0)
    return Outcome(
        False,
        f"{len(calls)} tool call(s): {_listing([show_call(c) for c in calls])}",
        0,
        len(calls),
    )


def max_tool_calls(events: Sequence[Event], n: int) -> Outcome:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        err = f"max_tool_calls takes a non-negative int, not {n!r}"
        return Outcome(False, err, None, None, err)
    calls = tool_calls_from_events(events)
    if len(calls) <= n:
        return Outcome(True, "", {"at_most": n}, len(calls))
    return Outcome(
        False,
        f"{len(calls)} tool calls, more than {n}: {_listing([show_call(c) for c in calls])}",
        {"at_most": n},
        len(calls),
    )


def _nonzero_exit(code: Any) -> bool:
    """An exit code other than 0, however an agent spelled it: an int, a float (``3.0``, or a
    number too large for an int), or text (``"3"`` from a shell script). None (unknown) and
    booleans are no code."""
    if code is None or isinstance(code, bool):
        return False
    if isinstance(code, (int, float)):
        return code != 0
    if isinstance(code, str):
        text = code.strip()
        try:
            return float(text) != 0
        except ValueError:
            return bool(text)  # "error", say: a code that is not 0
    return True


def no_failed_actions(statuses: Sequence[str], events: Sequence[Event]) -> Outcome:
    failures: list[str] = []
    failed_turn_event = False
    for ev in events:
        data = ev.data
        if ev.type == TOOL_RESULT and (
            data.get("status") == "failed" or (not data.get("status") and data.get("error"))
        ):
            error = data.get("error")
            failures.append(
                f"tool {data.get('name')} failed" + (f": {clip(str(error), 160)}" if error else "")
            )
        elif ev.type == COMMAND_COMPLETED or ev.type == "process.exited":
            # process.exited: the agent program itself (command harness) ended with this code.
            code = data.get("exit_code")
            if _nonzero_exit(code):
                what = "command" if ev.type == COMMAND_COMPLETED else "agent program"
                failures.append(f"{what} {preview(data.get('command'), 120)} exited {code}")
        elif ev.type in (TURN_FAILED, SESSION_FAILED):
            failed_turn_event = failed_turn_event or ev.type == TURN_FAILED
            error = data.get("error")
            what = "turn" if ev.type == TURN_FAILED else "session"
            failures.append(f"{what} failed" + (f": {clip(str(error), 160)}" if error else ""))
    if not failed_turn_event and "failed" in statuses:
        failures.append("a turn failed")
    if not failures:
        return Outcome(True, "", "no failed actions", [])
    return Outcome(
        False,
        f"{len(failures)} failed action(s): {_listing(failures)}",
        "no failed actions",
        failures,
    )


# ---------------------------------------------------------------------------------------------
# Events.

_EVENT_STEP_KEYS = frozenset({"type", "data"})


def _match_event(ev: Event, type_: Any, data: Any) -> Match:
    m = match_detail(type_, ev.type)
    if not m.ok:
        return Match(False, f"type {m.why}", m.error)
    if data is None:
        return Match(True)
    m = match_detail(data, dict(ev.data))
    if not m.ok:
        return Match(False, f"data {m.why}", m.error)
    return m


def event(events: Sequence[Event], type_: Any, data: Any = None, count: Count = None) -> Outcome:
    expected = {"type": describe(type_), "data": describe(data), "count": _describe_count(count)}
    hits: list[Event] = []
    misses: list[str] = []
    for ev in events:
        m = _match_event(ev, type_, data)
        if m.error:
            return Outcome(False, m.error, expected, None, m.error)
        if m.ok:
            hits.append(ev)
        elif not m.why.startswith("type"):
            misses.append(f"{_show_event(ev)}: {m.why}")
    actual = [ev.to_dict() for ev in hits[:SHOW_ITEMS]]
    c = _count_ok(count, len(hits))
    if c.error:
        return Outcome(False, c.error, expected, actual, c.error)
    if c.ok:
        return Outcome(True, "", expected, actual)
    label = type_ if isinstance(type_, str) else render(type_)
    if not hits and not misses:
        message = f"no {label} event; {_types_seen(events)}"
    elif not hits:
        message = (
            f"no {label} event matched data={render(data, 160)}; "
            f"{len(misses)} {label} event(s) seen: {_listing(misses, 4)}"
        )
    else:
        message = f"{len(hits)} {label} event(s) matched, {c.why}: {_listing([_show_event(e) for e in hits], 4)}"
    return Outcome(False, message, expected, actual)


def not_event(events: Sequence[Event], type_: Any, data: Any = None) -> Outcome:
    expected = {"not": {"type": describe(type_), "data": describe(data)}}
    hits: list[Event] = []
    for ev in events:
        m = _match_event(ev, type_, data)
        if m.error:
            return Outcome(False, m.error, expected, None, m.error)
        if m.ok:
            hits.append(ev)
    if not hits:
        return Outcome(True, "", expected, [])
    label = type_ if isinstance(type_, str) else render(type_)
    return Outcome(
        False,
        f"saw {len(hits)} {label} event(s): {_listing([_show_event(e) for e in hits], 4)}",
        expected,
        [ev.to_dict() for ev in hits[:SHOW_ITEMS]],
    )


def event_order(events: Sequence[Event], steps: Sequence[Any]) -> Outcome:
    expected = describe(list(steps))
    actual = [ev.type for ev in events]
    parsed: list[tuple[Any, Any]] = []
    for i, step in enumerate(steps, 1):
        if isinstance(step, Mapping):
            unknown = set(step) - _EVENT_STEP_KEYS
            if "type" not in step or unknown:
                err = f"event_order step {i} needs a 'type' and only ['data', 'type'], got {sorted(step)}"
                return Outcome(False, err, expected, None, err)
            parsed.append((step["type"], step.get("data")))
        else:
            parsed.append((step, None))
    missing, error = _in_order(events, parsed, lambda event, step: _match_event(event, *step))
    if error:
        return Outcome(False, error, expected, None, error)
    if missing is not None:
        seen = ", ".join(actual[:60]) + (f", … ({len(actual) - 60} more)" if len(actual) > 60 else "")
        return Outcome(
            False,
            f"step {missing} of {len(parsed)} ({render(steps[missing - 1], 160)}) not seen after the steps "
            f"before it; events in order: {seen or 'none'}",
            expected,
            clip(json.dumps(actual), 2000),
        )
    return Outcome(True, "", expected, None)


def events_satisfy(
    events: Sequence[Event], label: str, predicate: Callable[[list[Event]], Any]
) -> Outcome:
    if not callable(predicate):
        err = f"events_satisfy needs a predicate function, not {type(predicate).__name__}"
        return Outcome(False, err, label, None, err)
    try:
        verdict = predicate(list(events))
    except Exception as exc:  # noqa: BLE001 - a bug in the predicate is an error, never a pass
        err = f"{label}: predicate raised {type(exc).__name__}: {exc}"
        return Outcome(False, err, label, None, err)
    if isinstance(verdict, tuple) and len(verdict) == 2 and isinstance(verdict[0], bool):
        ok, note = verdict[0], str(verdict[1] or "")
    else:
        ok, note = bool(verdict), ""
    if ok:
        return Outcome(True, note, label, None)
    detail = f": {note}" if note else ""
    return Outcome(False, f"{label} was not satisfied{detail}; {_types_seen(events)}", label, None)


# ---------------------------------------------------------------------------------------------
# Structured output.


def output_equals(output: Any, value: Any) -> Outcome:
    m = match_detail(value, output, exact=True)
    expected = describe(value)
    if m.ok:
        return Outcome(True, "", expected, output)
    message = m.why if not m.why.startswith("at ") else f"{m.why}; output was {preview(output)}"
    return Outcome(False, f"output: {message}", expected, output, m.error)


_FENCE = re.compile(r"^```[\w-]*\s*\n(.*?)\n?```$", re.DOTALL)


def decode_output(output: Any) -> Any:
    """A string holding a JSON object or array (possibly in a ```json fence) is decoded, since
    model agents return structured output as text; anything else is returned unchanged."""
    if not isinstance(output, str):
        return output
    text = output.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            return output
    return output


def output_matches(output: Any, spec: Any) -> Outcome:
    if output is None:
        return Outcome(
            False,
            "there was no output to validate (no turn returned anything)",
            _spec_name(spec),
            None,
        )
    value = decode_output(output)
    if isinstance(spec, type) and hasattr(spec, "model_validate"):
        return _validate_pydantic(value, output, spec)
    if isinstance(spec, Mapping):
        return _validate_schema(value, output, spec)
    err = (
        "output_matches takes a pydantic model class or a JSON schema dict, "
        f"not {type(spec).__name__}"
    )
    return Outcome(False, err, None, output, err)


def _spec_name(spec: Any) -> Any:
    if isinstance(spec, type):
        return spec.__name__
    return describe(spec)


def _validate_pydantic(value: Any, output: Any, model: type) -> Outcome:
    try:
        from pydantic import ValidationError
    except ImportError:  # pragma: no cover - a pydantic model implies pydantic is installed
        err = "output_matches with a pydantic model needs pydantic installed (pip install pydantic)"
        return Outcome(False, err, model.__name__, output, err)
    try:
        model.model_validate(value)  # type: ignore[attr-defined]
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e.get('loc', ()))) or '$'}: {e.get('msg')}"
            for e in exc.errors()[:5]
        )
        return Outcome(
            False,
            f"output is not a valid {model.__name__}: {problems}; output was {preview(output)}",
            model.__name__,
            output,
        )
    except Exception as exc:  # noqa: BLE001 - a validator that crashed is an error
        err = f"validating against {model.__name__} raised {type(exc).__name__}: {exc}"
        return Outcome(False, err, model.__name__, output, err)
    return Outcome(True, "", model.__name__, output)


def _validate_schema(value: Any, output: Any, schema: Mapping[str, Any]) -> Outcome:
    expected = describe(schema)
    try:
        import jsonschema  # type: ignore[import-untyped, unused-ignore]
        from jsonschema.exceptions import best_match  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        err = "output_matches with a JSON schema needs the jsonschema package: pip install 'anpord[schema]'"
        return Outcome(False, err, expected, output, err)
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        validator = cls(schema)
        error = best_match(validator.iter_errors(value))
    except jsonschema.exceptions.SchemaError as exc:
        err = f"the JSON schema is invalid: {exc.message}"
        return Outcome(False, err, expected, output, err)
    except Exception as exc:  # noqa: BLE001
        err = f"validating against the JSON schema raised {type(exc).__name__}: {exc}"
        return Outcome(False, err, expected, output, err)
    if error is None:
        return Outcome(True, "", expected, output)
    where = "$" + "".join(
        f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path
    )
    return Outcome(
        False,
        f"output does not match the schema at {where}: {clip(error.message, 300)}; output was {preview(output)}",
        expected,
        output,
    )
