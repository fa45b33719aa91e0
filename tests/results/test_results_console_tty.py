"""The console reporter on a terminal: colour, the live progress bar and grid, throttled redraws."""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import struct
import termios
import threading
import time

import pytest
from results_factories import ANSI, TTYStringIO, feed, run_info, summary_for, trial

from anpord.results import ConsoleReporter, _live

ERASE = "\x1b[J"


@pytest.fixture(autouse=True)
def _terminal_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("LINES", "24")


def test_a_terminal_gets_colour_and_a_live_region() -> None:
    out = TTYStringIO()
    reporter = ConsoleReporter(out)
    assert reporter.color and reporter.live
    results = [trial("a"), trial("b", "failed", reason="nope")]
    summary = feed(reporter, results)
    text = out.getvalue()
    assert "\x1b[32m✓\x1b[0m" in text and "\x1b[31m✗\x1b[0m" in text
    assert "0/2 trials" in ANSI.sub("", text)  # the progress bar, drawn at the start
    assert ERASE in text  # and erased before the summary
    assert text.endswith("\n" + summary.closing_line() + "\n")


def test_progress_bar_counts_finished_trials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_live, "REDRAW_INTERVAL", 0.0)  # paint on every event
    out = TTYStringIO()
    reporter = ConsoleReporter(out)
    results = [trial("a"), trial("b", "failed", reason="x"), trial("c", "void", reason="y")]
    reporter.on_run_start(run_info(results))
    for r in results:
        reporter.on_trial_end(r)
    plain = ANSI.sub("", out.getvalue())
    assert "3/3 trials ✓1 ✗1 ○1" in plain


def test_live_grid_shows_tallies_of_cells_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_live, "REDRAW_INTERVAL", 0.0)
    out = TTYStringIO()
    reporter = ConsoleReporter(out)
    planned = [trial("weather/rain", "passed", v, n) for v in ("small", "large") for n in range(3)]
    reporter.on_run_start(run_info(planned))
    reporter.on_trial_start("weather/rain", "small", 0)
    reporter.on_trial_end(trial("weather/rain", "passed", "small", 0))
    reporter.on_trial_start("weather/rain", "small", 1)
    reporter.on_trial_end(trial("weather/rain", "failed", "small", 1, reason="x"))
    reporter.on_trial_start("weather/rain", "large", 0)
    reporter.on_trial_end(trial("weather/rain", "void", "large", 0, reason="judge down"))
    region = [ANSI.sub("", line).rstrip() for line in reporter._region_lines()]
    assert region[0].split() == ["small", "large"]
    assert region[1].split() == ["weather/rain", "1/2…", "0/0", "○1…"]
    assert region[-1].lstrip("█░ ").startswith("3/6 trials")
    # What the terminal received matches what the reporter holds.
    assert "weather/rain  1/2…" in ANSI.sub("", out.getvalue())


def test_live_region_fits_the_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    out = TTYStringIO()
    reporter = ConsoleReporter(out)
    long_id = "suite/" + "x" * 100
    planned = [
        trial(long_id, "passed", v, n)
        for v in ("small", "a-very-long-variant-label")
        for n in range(2)
    ]
    reporter.on_run_start(run_info(planned))
    reporter.on_trial_start(long_id, "small", 0)
    for line in reporter._region_lines():
        assert len(ANSI.sub("", line)) <= 39


def test_redraws_are_throttled_for_ten_thousand_trials() -> None:
    out = TTYStringIO()
    reporter = ConsoleReporter(out)
    results = [trial(f"case/{i:05d}") for i in range(10_000)]
    started = time.monotonic()
    summary = feed(reporter, results)
    elapsed = time.monotonic() - started
    assert reporter.paints <= elapsed * 10 + 2
    assert out.getvalue().count(ERASE) <= reporter.paints + 1
    lines = ANSI.sub("", out.getvalue()).splitlines()
    assert sum(1 for line in lines if line.startswith("✓ case/")) == 10_000
    assert lines[-1] == summary.closing_line() == "10000 passed, 0 failed"


def test_lines_held_back_by_the_throttle_appear_without_further_events() -> None:
    async def scenario() -> str:
        out = TTYStringIO()
        reporter = ConsoleReporter(out)
        results = [trial("a"), trial("b")]
        reporter.on_run_start(run_info(results))  # paints now
        reporter.on_trial_end(results[0])  # within the interval: held back, a paint is scheduled
        await asyncio.sleep(0.3)
        seen = ANSI.sub("", out.getvalue())
        reporter.on_trial_end(results[1])
        reporter.on_run_end(summary_for(results), results)
        return seen

    seen = asyncio.run(scenario())
    assert "✓ a" in seen


def _read_all(fd: int, sink: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO once the other side is closed
            return
        if not chunk:
            return
        sink.append(chunk)


def test_a_real_pseudo_terminal() -> None:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    chunks: list[bytes] = []
    reader = threading.Thread(target=_read_all, args=(master, chunks), daemon=True)
    reader.start()
    stream = os.fdopen(slave, "w", encoding="utf-8")
    try:
        reporter = ConsoleReporter(stream)
        assert reporter.color and reporter.live
        assert reporter._terminal_size() == (100, 30)
        results = [trial("a", "passed", v, n) for v in ("small", "large") for n in range(2)]
        results[1] = trial("a", "failed", "small", 1, reason="reply did not include 'Sunny'")
        summary = feed(reporter, results)
    finally:
        stream.close()
    reader.join(timeout=5)
    os.close(master)
    text = b"".join(chunks).decode("utf-8").replace("\r\n", "\n")
    assert "\x1b[" in text
    plain = ANSI.sub("", text)
    assert "✗ a  small  1/2 passed" in plain
    assert plain.rstrip("\n").splitlines()[-1] == summary.closing_line()


def test_wide_characters_are_measured_in_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    from anpord.results._text import columns, fit

    assert fit("abc", 3) == ("abc", 3)
    assert fit("abcdef", 4) == ("abc…", 4)
    assert fit("天気予報", 5) == ("天気…", 5)
    assert fit("天気予報", 8) == ("天気予報", 8)
    monkeypatch.setenv("COLUMNS", "30")
    out = TTYStringIO()
    reporter = ConsoleReporter(out)
    planned = [
        trial("天気/" + "予報" * 20, "passed", v, n) for v in ("small", "large") for n in range(2)
    ]
    reporter.on_run_start(run_info(planned))
    reporter.on_trial_start(planned[0].case_id, "small", 0)
    for line in reporter._region_lines():
        assert sum(columns(ch) for ch in ANSI.sub("", line)) <= 29
