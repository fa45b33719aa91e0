"""Limits (``runner/_limits.py``) and the MCP dedupe (``mocks/_dedupe.py``): what they add per event.

    python bench/limits.py [--events 200000]

Figures (printed, not asserted):

1. **Limit watcher**: ``LimitWatcher.see`` per ``usage`` event (tokens and a reported cost), per
   ``model.called`` event priced from the table, and per event of another type (what every
   ``tool.called`` and ``message.completed`` of a limited trial pays): mean nanoseconds.
2. **MCP dedupe**: ``McpDedupe.admit`` per MCP call (its stream report and the mock's record,
   paired), and per event that is not an MCP call: mean nanoseconds.

A trial has tens to thousands of events; at these costs neither shows next to one model call.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from anpord.events import Event  # noqa: E402
from anpord.mocks._dedupe import McpDedupe  # noqa: E402
from anpord.runner._limits import LimitWatcher  # noqa: E402


def _per_event(fn, events: list[Event]) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    for e in events:
        fn(e)
    return (time.perf_counter() - started) / len(events) * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    n = parser.parse_args().events

    big = 10**15  # limits never reached: the cost of watching, not of stopping
    usage = [Event("usage", {"input_tokens": 100, "output_tokens": 20, "cost": 0.001}) for _ in range(n)]
    priced = [Event("model.called", {"source": "proxy", "model": "gpt-4o", "input_tokens": 100,
                                     "output_tokens": 20, "cost": None}) for _ in range(n)]
    other = [Event("tool.called", {"call_id": "c", "name": "Bash", "input": {"command": "ls"}}) for _ in range(n)]
    print(f"limit watcher, {n:,} events each:")
    for label, events in (("usage (reported cost)", usage), ("model.called (priced from the table)", priced),
                          ("any other event", other)):
        watcher = LimitWatcher(big, float(big), model="gpt-4o")
        print(f"  {label:<40} {_per_event(watcher.see, events):8.0f} ns/event")

    print(f"MCP dedupe, {n:,} calls:")
    dedupe = McpDedupe({"crm": ["lookup"]})
    pairs: list[Event] = []
    for i in range(n // 2):
        args = {"email": f"u{i}@example.com"}
        pairs.append(Event("tool.called", {"call_id": f"s{i}", "name": "mcp__crm__lookup", "input": args}))
        pairs.append(Event("tool.called", {"call_id": f"m{i}", "name": "crm.lookup", "input": args, "source": "mock"}))
    print(f"  {'an MCP call (stream + mock, paired)':<40} {_per_event(dedupe.admit, pairs):8.0f} ns/event")
    print(f"  {'any other event':<40} {_per_event(dedupe.admit, other):8.0f} ns/event")


if __name__ == "__main__":
    main()
