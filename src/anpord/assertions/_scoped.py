"""``ScopedAssertions``: the assertion methods shared by ``t`` (the whole run), a session and a turn.

A class mixes this in and says what is in its scope by providing ``_assert_events``,
``_assert_statuses``, ``_assert_output``, ``_assert_recorder`` and ``_assert_scope``. Each method
records exactly one assertion (a gate by default) and returns its handle. A miss is recorded, never
raised; a user function that raises makes the assertion an ``error``, which never passes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ..events import Event
from .._render import clip, render
from ..results._model import AssertionRecord
from . import _checks
from ._checks import Count, Outcome
from ._handle import AssertionHandle, decide_status
from ._recorder import Recorder, clip_actual

__all__ = ["ScopedAssertions"]

_NAME_LIMIT = 160


def _call_name(fn: str, *args: Any, **kwargs: Any) -> str:
    """How the assertion reads in reports: ``called_tool("get_weather", input={"city": "NYC"})``."""
    parts = [render(a, 80) for a in args]
    parts += [f"{k}={render(v, 80)}" for k, v in kwargs.items() if v is not None]
    return clip(f"{fn}({', '.join(parts)})", _NAME_LIMIT)


class ScopedAssertions:
    """Assertions over the events, turns and output in one scope."""

    __slots__ = ()

    # -- what a scope provides ----------------------------------------------------------------

    def _assert_events(self) -> Sequence[Event]:
        """Events in scope, oldest first."""
        raise NotImplementedError

    def _assert_statuses(self) -> Sequence[str]:
        """Statuses of the settled turns in scope, in order (completed|waiting|failed|cancelled)."""
        raise NotImplementedError

    def _assert_output(self) -> Any:
        """The structured output of the last turn in scope (its data, else its message), or None."""
        raise NotImplementedError

    def _assert_recorder(self) -> Recorder:
        raise NotImplementedError

    def _assert_scope(self) -> str:
        """``run``, ``session <id>`` or ``turn <n>``."""
        raise NotImplementedError

    # -- recording ----------------------------------------------------------------------------

    def _assert_run(
        self, name: str, check: Callable[[], Outcome], label: str | None = None
    ) -> AssertionHandle:
        try:
            out = check()
        except Exception as exc:  # noqa: BLE001 - an assertion that raised is an error, never a pass
            out = Outcome(
                False,
                f"{name} raised {type(exc).__name__}: {exc}",
                error=str(exc) or type(exc).__name__,
            )
        record = AssertionRecord(
            name=name,
            kind="gate",
            status="error" if out.error else "passed",
            score=1.0 if out.ok else 0.0,
            threshold=1.0,
            expected=out.expected,
            actual=clip_actual(out.actual),
            message=out.message,
            label=label,
            scope=self._assert_scope(),
        )
        decide_status(record)
        return self._assert_recorder().record(record)

    # -- turns --------------------------------------------------------------------------------

    def succeeded(self) -> AssertionHandle:
        """At least one turn settled and none failed."""
        return self._assert_run(
            "succeeded()", lambda: _checks.succeeded(self._assert_statuses(), self._assert_events())
        )

    def parked(self) -> AssertionHandle:
        """The last settled turn is waiting on an input request."""
        return self._assert_run(
            "parked()", lambda: _checks.parked(self._assert_statuses(), self._assert_events())
        )

    # -- messages -----------------------------------------------------------------------------

    def message_includes(self, text: str | re.Pattern[str]) -> AssertionHandle:
        """Some assistant message contains ``text`` (or matches the compiled regex)."""
        return self._assert_run(
            _call_name("message_includes", text),
            lambda: _checks.message_includes(self._assert_events(), text),
        )

    # -- tools --------------------------------------------------------------------------------

    def called_tool(
        self,
        name: str,
        input: Any = None,
        output: Any = None,
        status: str | None = None,
        count: Count = None,
    ) -> AssertionHandle:
        """Tool ``name`` was called — at least once, or ``count`` times (an int, or a predicate on
        the number) — counting only calls whose ``input``/``output`` match (partially, deeply) and
        whose ``status`` (``completed``/``failed``) is the one given."""
        return self._assert_run(
            _call_name("called_tool", name, input=input, output=output, status=status, count=count),
            lambda: _checks.called_tool(
                self._assert_events(), name, input=input, output=output, status=status, count=count
            ),
        )

    def not_called_tool(self, name: str) -> AssertionHandle:
        return self._assert_run(
            _call_name("not_called_tool", name),
            lambda: _checks.not_called_tool(self._assert_events(), name),
        )

    def tool_order(self, steps: Sequence[Any]) -> AssertionHandle:
        """The tools were called in this order, other calls allowed in between. A step is a name
        or ``{"name": ..., "input": ..., "output": ..., "status": ...}``."""
        return self._assert_run(
            _call_name("tool_order", list(steps)),
            lambda: _checks.tool_order(self._assert_events(), steps),
        )

    def used_no_tools(self) -> AssertionHandle:
        return self._assert_run(
            "used_no_tools()", lambda: _checks.used_no_tools(self._assert_events())
        )

    def max_tool_calls(self, n: int) -> AssertionHandle:
        return self._assert_run(
            _call_name("max_tool_calls", n),
            lambda: _checks.max_tool_calls(self._assert_events(), n),
        )

    def no_failed_actions(self) -> AssertionHandle:
        """No failed tool result, no command with a non-zero exit code, no failed turn or session."""
        return self._assert_run(
            "no_failed_actions()",
            lambda: _checks.no_failed_actions(self._assert_statuses(), self._assert_events()),
        )

    # -- events -------------------------------------------------------------------------------

    def event(self, type: str, data: Any = None, count: Count = None) -> AssertionHandle:
        """An event of ``type`` whose data matches ``data`` (partially, deeply) — at least once, or
        ``count`` times."""
        return self._assert_run(
            _call_name("event", type, data=data, count=count),
            lambda: _checks.event(self._assert_events(), type, data, count),
        )

    def not_event(self, type: str, data: Any = None) -> AssertionHandle:
        return self._assert_run(
            _call_name("not_event", type, data=data),
            lambda: _checks.not_event(self._assert_events(), type, data),
        )

    def event_order(self, steps: Sequence[Any]) -> AssertionHandle:
        """These events happened in this order, others allowed in between. A step is a type or
        ``{"type": ..., "data": ...}``."""
        return self._assert_run(
            _call_name("event_order", list(steps)),
            lambda: _checks.event_order(self._assert_events(), steps),
        )

    def events_satisfy(
        self, label: str, predicate: Callable[[list[Event]], Any]
    ) -> AssertionHandle:
        """``predicate(events)`` is truthy (or returns ``(True, message)``)."""
        return self._assert_run(
            _call_name("events_satisfy", label),
            lambda: _checks.events_satisfy(self._assert_events(), label, predicate),
            label=label,
        )

    # -- structured output --------------------------------------------------------------------

    def output_equals(self, value: Any) -> AssertionHandle:
        """The last turn's output equals ``value``. Unlike ``event(data=...)``, dicts must have
        exactly the expected keys; nested matchers (``includes(...)``, regexes, predicates) still
        apply inside ``value``."""
        return self._assert_run(
            _call_name("output_equals", value),
            lambda: _checks.output_equals(self._assert_output(), value),
        )

    def output_matches(self, spec: Any) -> AssertionHandle:
        """The last turn's output validates against a pydantic model class or a JSON schema dict
        (needs ``jsonschema``). Output text holding a JSON object or array is decoded first."""
        return self._assert_run(
            f"output_matches({spec.__name__})"
            if isinstance(spec, type)
            else _call_name("output_matches", spec),
            lambda: _checks.output_matches(self._assert_output(), spec),
        )
