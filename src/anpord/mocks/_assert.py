"""``t.mock(name)`` and ``context.mock(name)``: a mock's calls, and assertions over them.

Calls are the trial's ``mock.called`` events of that mock, oldest first. Matching is the usual
(§4): ``route_or_tool`` tests an HTTP call's ``"METHOD /path"`` (its declared route or the request
itself), an MCP call's tool name, or a CLI call's command line; ``json=`` the request body,
``input=`` an MCP tool's arguments (or a CLI's stdin), ``argv=`` a CLI's arguments. A ``*`` in a
``route_or_tool`` string matches any run of characters, as in the routes a mock declares, so
``not_called("DELETE /orders/*")`` can fail. A filter the mock's kind has no field for is a usage
error, never a check that quietly cannot match (or, in ``not_called``, cannot fail).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._render import clip, describe, preview, render
from ..assertions._checks import Count, Outcome, _count_ok, _describe_count, _listing, _times
from ..events import Event
from ..expect import Match, match_detail
from ._declare import MOCK_CALLED, glob

__all__ = ["MockView", "mock_calls", "show_mock_call"]


def mock_calls(events: Sequence[Event], name: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in events if e.type == MOCK_CALLED and e.data.get("mock") == name]


def show_mock_call(call: dict[str, Any]) -> str:
    kind = call.get("kind")
    if kind == "http":
        body = preview(call["json"], 120) if call.get("json") is not None else clip(call.get("body") or "", 120)
        text = f"{call.get('method')} {call.get('path')}{' ' + body if body else ''} → {call.get('status')}"
    elif kind == "cli":
        text = f"{shlex.join([call['mock'], *call.get('argv', [])])} → exit {call.get('exit_code')}"
    else:
        text = f"{call.get('tool')}({preview(call.get('input'), 120)}) → {call.get('status')}"
    if call.get("error"):
        text += f" ({clip(str(call['error']), 120)})"
    return text


def _subject(call: dict[str, Any]) -> list[str]:
    kind = call.get("kind")
    if kind == "http":
        return [s for s in (call.get("route"), f"{call.get('method')} {call.get('path')}") if s]
    if kind == "cli":
        return [shlex.join([call["mock"], *call.get("argv", [])]), shlex.join(call.get("argv", []))]
    return [str(call.get("tool"))]


# Which filters each kind of mock has a field for.
_APPLIES = {"http": ("json",), "cli": ("argv", "input"), "mcp": ("input",)}
_FIELD = {"json": "an HTTP request's JSON body", "argv": "a CLI call's arguments",
          "input": "an MCP tool's arguments or a CLI call's stdin"}


def misapplied(name: str, kind: str | None, filters: list[tuple[str, Any]]) -> str | None:
    """Why a filter cannot apply to this mock (``json=`` on a CLI mock, ``argv=`` on an HTTP one)."""
    wrong = [k for k, _ in filters if kind in _APPLIES and k not in _APPLIES[kind]]
    if not wrong:
        return None
    usable = " or ".join(f"{k}=" for k in _APPLIES[kind or ""]) or "none"
    return (f"{wrong[0]}= filters {_FIELD[wrong[0]]}, and mock {name} is {'a' if kind == 'cli' else 'an'} "
            f"{kind.upper() if kind else ''} mock (its filters: {usable})")


def _route_match(route: Any, subject: str) -> Match:
    if isinstance(route, str) and "*" in route:
        if glob(route).fullmatch(subject):
            return Match(True)
        return Match(False, f"expected {render(route, 120)}, saw {render(subject, 120)}")
    return match_detail(route, subject)


def _match(call: dict[str, Any], route: Any, filters: list[tuple[str, Any]]) -> Match:
    if route is not None:
        tries = [_route_match(route, s) for s in _subject(call)]
        err = next((m.error for m in tries if m.error), None)
        if err or not any(m.ok for m in tries):
            return Match(False, f"route {tries[-1].why}" if tries else "route", err)
    for key, expected in filters:
        field = "stdin" if key == "input" and call.get("kind") == "cli" else key
        m = match_detail(expected, call.get(field))
        if not m.ok:
            return Match(False, f"{key}: {m.why}", m.error)
    return Match(True)


def _filters(json: Any, input: Any, argv: Any) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in (("json", json), ("input", input), ("argv", argv)) if v is not None]


def called(name: str, calls: list[dict[str, Any]], route: Any, filters: list[tuple[str, Any]],
           count: Count, kind: str | None = None) -> Outcome:
    expected = {"mock": name, "route_or_tool": describe(route), **{k: describe(v) for k, v in filters},
                "count": _describe_count(count)}
    if (err := misapplied(name, kind, filters)) is not None:
        return Outcome(False, err, expected, calls, err)
    hits: list[Any] = []
    misses: list[Any] = []
    for call in calls:
        m = _match(call, route, filters)
        if m.error:
            return Outcome(False, m.error, expected, calls, m.error)
        (hits if m.ok else misses).append(call)
    c = _count_ok(count, len(hits))
    if c.error:
        return Outcome(False, c.error, expected, calls, c.error)
    if c.ok:
        return Outcome(True, "", expected, calls)
    wanted = " ".join(x for x in [render(route, 120) if route is not None else "",
                                  *(f"{k}={render(v, 120)}" for k, v in filters)] if x)
    received = _listing([show_mock_call(c) for c in calls], 5) if calls else "nothing"
    if not hits:
        message = f"mock {name} received no call{' matching ' + wanted if wanted else ''}; it received: {received}"
    else:
        message = f"mock {name} received {_times(len(hits))} matching {wanted or 'any'}, {c.why}; it received: {received}"
    return Outcome(False, message, expected, calls)


def not_called(name: str, calls: list[dict[str, Any]], route: Any, filters: list[tuple[str, Any]],
               kind: str | None = None) -> Outcome:
    expected = {"mock": name, "route_or_tool": describe(route), **{k: describe(v) for k, v in filters}, "count": 0}
    if (err := misapplied(name, kind, filters)) is not None:
        return Outcome(False, err, expected, calls, err)
    hits = []
    for call in calls:
        m = _match(call, route, filters)
        if m.error:
            return Outcome(False, m.error, expected, calls, m.error)
        if m.ok:
            hits.append(call)
    if not hits:
        return Outcome(True, "", expected, calls)
    return Outcome(False, f"mock {name} was called {_times(len(hits))} (expected none): "
                          f"{_listing([show_mock_call(c) for c in hits], 5)}", expected, calls)


class MockView:
    """One mock of the trial: ``.calls`` and, on ``t``, ``.called(...)`` / ``.not_called(...)``."""

    def __init__(self, name: str, declared: Mapping[str, str], events: Callable[[], Sequence[Event]],
                 run: Callable[[str, Callable[[], Outcome]], Any] | None = None):
        # declared: the trial's mocks, each name with its kind ("http", "cli", "mcp")
        self.name, self._declared, self._events, self._run = name, dict(declared), events, run

    def _known(self) -> None:
        if self.name not in self._declared:
            raise ValueError(f"no mock named {self.name!r} in this trial "
                             f"(declared: {', '.join(self._declared) or 'none'})")

    @property
    def calls(self) -> list[dict[str, Any]]:
        """Each call the mock received, oldest first (the ``mock.called`` event's data)."""
        self._known()
        return mock_calls(self._events(), self.name)

    def _assert(self, fn: str, check: Callable[[], Outcome], route: Any, **kw: Any) -> Any:
        if self._run is None:
            raise TypeError("assert on a mock with t.mock(name); context.mock(name) offers .calls")
        from ..assertions._scoped import _call_name

        return self._run(_call_name(f"mock({self.name!r}).{fn}", *([route] if route is not None else []), **kw), check)

    def called(self, route_or_tool: Any = None, *, json: Any = None, input: Any = None, argv: Any = None,
               count: Count = None) -> Any:
        """The mock received a matching call — at least once, or ``count`` times."""
        filters, kind = _filters(json, input, argv), self._declared.get(self.name)
        return self._assert("called", lambda: called(self.name, self.calls, route_or_tool, filters, count, kind),
                            route_or_tool, json=json, input=input, argv=argv, count=count)

    def not_called(self, route_or_tool: Any = None, *, json: Any = None, input: Any = None,
                   argv: Any = None) -> Any:
        """The mock received no matching call (with no arguments: no call at all)."""
        filters, kind = _filters(json, input, argv), self._declared.get(self.name)
        return self._assert("not_called", lambda: not_called(self.name, self.calls, route_or_tool, filters, kind),
                            route_or_tool, json=json, input=input, argv=argv)
