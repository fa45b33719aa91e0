"""Feeding recorded coding-agent streams to their parsers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from anpord.events import Event
from anpord.harnesses._stream import StreamParser, TurnEnd
from anpord.harnesses.coding import CODING_CLIS

STREAMS = Path(__file__).resolve().parents[2] / "fixtures" / "harness-streams"


def stream_lines(relpath: str) -> list[str]:
    """A fixture's stdout lines: a ``.json`` file is one pretty-printed document, printed by the
    CLI as one line; a ``.jsonl`` file is its lines as they are."""
    path = STREAMS / relpath
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return [json.dumps(json.loads(text))]
    return text.splitlines()


def run_stream(
    cli: str, lines: list[str], exit_code: int | None = 0, **options: Any
) -> tuple[list[Event], TurnEnd]:
    parser = CODING_CLIS[cli].parser(**options)
    assert isinstance(parser, StreamParser)
    events: list[Event] = []
    for line in lines:
        events += parser.feed(line)
    return events, parser.finish(exit_code)


def of_type(events: list[Event], kind: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in events if e.type == kind]


def anpord_events(events: list[Event]) -> list[tuple[str, dict[str, Any]]]:
    """The events that are not raw copies of CLI lines, as (type, data)."""
    return [(e.type, dict(e.data)) for e in events if "raw" not in e.data]


def line(**obj: Any) -> str:
    return json.dumps(obj)
