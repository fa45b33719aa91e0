"""The console reporter in plain mode: marks, details, the grid, the summary, the closing line."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from results_factories import (
    ANSI,
    RUN_DIR,
    TTYStringIO,
    feed,
    gate_failure,
    run_info,
    soft_miss,
    summary_for,
    trial,
)

from anpord.results import AssertionRecord, ConsoleReporter


@pytest.fixture(autouse=True)
def _plain_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


def mixed_results() -> list:
    return [
        trial("weather/sunny", "passed", duration=0.25),
        trial(
            "weather/rain",
            "failed",
            reason="reply did not include 'Sunny'",
            assertions=[
                gate_failure(
                    "message_includes", "Sunny", "Rain all day", "reply did not include 'Sunny'"
                )
            ],
        ),
        trial(
            "weather/boom",
            "failed",
            reason="ValueError: boom",
            error="ValueError: boom",
            traceback="Traceback (most recent call last):\n  ...\nValueError: boom",
            artifact="trials/weather/boom/small/0.json",
        ),
        trial("weather/slow", "timed_out", reason="timed out after 30s"),
        trial("weather/judge", "void", reason="judge could not answer: connection refused"),
        trial("weather/later", "skipped", reason="needs an API key"),
        trial(
            "weather/tone",
            "scored",
            score=0.62,
            assertions=[soft_miss("similarity", 0.62, 0.8, label="close to reference")],
        ),
    ]


def run_plain(results: list, **kw: object) -> tuple[str, object]:
    out = io.StringIO()
    summary = feed(ConsoleReporter(out, **kw), results)  # type: ignore[arg-type]
    return out.getvalue(), summary


def test_one_line_per_case_with_its_mark() -> None:
    text, _ = run_plain(mixed_results())
    lines = text.splitlines()
    assert lines[0] == "✓ weather/sunny  0.25s"
    assert "✗ weather/rain  failed: reply did not include 'Sunny'" in lines
    assert "✗ weather/slow  timed out after 30s" in lines
    assert "○ weather/judge  void: judge could not answer: connection refused" in lines
    assert "– weather/later  skipped: needs an API key" in lines
    assert "~ weather/tone  score 0.62 (close to reference 0.62 < 0.80)" in lines


def test_failure_details_show_the_check_expected_actual_and_message() -> None:
    text, _ = run_plain(mixed_results())
    lines = text.splitlines()
    at = lines.index("✗ weather/rain  failed: reply did not include 'Sunny'")
    assert lines[at + 1 : at + 5] == [
        "    message_includes  [gate, failed]",
        "      expected: 'Sunny'",
        "      actual:   'Rain all day'",
        "      reply did not include 'Sunny'",
    ]


def test_a_label_names_the_failed_check() -> None:
    r = trial(
        "c", "failed", reason="x", assertions=[gate_failure("equals", 1, 2, label="answer is one")]
    )
    text, _ = run_plain([r])
    assert "    answer is one  [gate, failed]" in text.splitlines()


def test_an_execution_error_shows_one_line_and_the_artifact_path() -> None:
    text, _ = run_plain(mixed_results())
    assert "    error: ValueError: boom" in text
    assert f"    traceback: {RUN_DIR}/trials/weather/boom/small/0.json" in text
    assert "most recent call last" not in text  # the traceback stays in the artifact


def test_artifact_path_is_relative_to_the_current_folder_when_inside_it(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run_dir = str(tmp_path / ".anpord" / "runs" / "r1")
    r = trial(
        "c", "failed", error="KeyError: 'x'", traceback="tb", artifact="trials/c/small/0.json"
    )
    out = io.StringIO()
    feed(
        ConsoleReporter(out),
        [r],
        info=run_info([r], run_dir=run_dir),
        summary=summary_for([r], run_dir=run_dir),
    )
    assert "traceback: .anpord/runs/r1/trials/c/small/0.json" in out.getvalue()
    assert "Results: .anpord/runs/r1" in out.getvalue()


def test_a_soft_check_that_misses_does_not_show_as_a_failed_gate() -> None:
    r = trial(
        "c",
        "failed",
        reason="gate failed",
        assertions=[gate_failure("includes", "a", "b"), soft_miss("similarity", 0.3, 0.9)],
    )
    text, _ = run_plain([r])
    assert "includes  [gate, failed]" in text
    assert "similarity" not in text


def test_void_details_show_the_check_that_could_not_measure() -> None:
    a = AssertionRecord(
        name="judge.closed_qa", kind="soft", status="void", score=0.0, message="HTTP 503"
    )
    text, _ = run_plain([trial("c", "void", reason="judge could not answer", assertions=[a])])
    assert "    judge.closed_qa  [soft, void]" in text
    assert "      HTTP 503" in text


def test_closing_line_is_exact_and_last() -> None:
    text, summary = run_plain(mixed_results())
    assert summary.closing_line() == "1 passed, 3 failed, 1 scored, 1 void, 1 skipped"  # type: ignore[attr-defined]
    assert text.endswith("\n1 passed, 3 failed, 1 scored, 1 void, 1 skipped\n")
    assert text.splitlines()[-1] == summary.closing_line()  # type: ignore[attr-defined]


def test_all_passed_closing_line() -> None:
    text, _ = run_plain([trial("a"), trial("b")])
    assert text.splitlines()[-1] == "2 passed, 0 failed"
    assert "Not passed" not in text


def test_summary_lists_what_did_not_pass_and_the_run_folder() -> None:
    text, _ = run_plain(mixed_results())
    tail = text[text.index("Not passed") :].splitlines()
    assert "  ✗ weather/rain  failed: reply did not include 'Sunny'" in tail
    assert "  ○ weather/judge  void: judge could not answer: connection refused" in tail
    assert not any("weather/later" in line for line in tail)  # skipped is not a failure
    assert f"Results: {RUN_DIR}" in tail


def test_plain_output_has_no_escape_codes() -> None:
    text, _ = run_plain(mixed_results(), verbose=True)
    assert "\x1b" not in text and "\r" not in text


def test_no_color_on_a_terminal_means_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    out = TTYStringIO()
    reporter = ConsoleReporter(out)
    assert not reporter.color and not reporter.live
    feed(reporter, mixed_results())
    assert "\x1b" not in out.getvalue() and "\r" not in out.getvalue()
    assert reporter.paints == 0


def test_color_can_be_forced_on_and_the_closing_line_stays_plain() -> None:
    out = io.StringIO()
    summary = feed(ConsoleReporter(out, color=True), mixed_results())
    text = out.getvalue()
    assert "\x1b[31m✗\x1b[0m" in text
    assert text.splitlines()[-1] == summary.closing_line()


def test_verbose_streams_logs_prefixed_with_the_case_id() -> None:
    out = io.StringIO()
    results = [trial("weather/sunny"), trial("weather/rain", "failed", reason="nope")]
    feed(
        ConsoleReporter(out, verbose=True),
        results,
        logs={"weather/sunny": ["fetching", "two\nlines"]},
    )
    lines = out.getvalue().splitlines()
    assert lines[:4] == [
        "weather/sunny | fetching",
        "weather/sunny | two",
        "weather/sunny | lines",
        "✓ weather/sunny  0.00s",
    ]


def test_logs_are_quiet_without_verbose() -> None:
    out = io.StringIO()
    feed(ConsoleReporter(out), [trial("a")], logs={"a": ["secret chatter"]})
    assert "secret chatter" not in out.getvalue()


def test_interrupted_run_says_so_before_the_closing_line() -> None:
    results = [trial("a"), trial("b", "failed", reason="x")]
    out = io.StringIO()
    info = run_info(results + [trial("c")])
    summary = feed(
        ConsoleReporter(out), results, info=info, summary=summary_for(results, interrupted=True)
    )
    lines = out.getvalue().splitlines()
    assert lines[-1] == summary.closing_line() == "1 passed, 1 failed"
    assert lines[-2] == "Interrupted: 2 of 3 trials finished; finished trials are kept."


def test_a_late_reporter_reports_from_on_run_end_alone() -> None:
    out = io.StringIO()
    results = mixed_results()
    summary = summary_for(results)
    ConsoleReporter(out).on_run_end(summary, results)
    text = out.getvalue()
    assert "✓ weather/sunny  0.25s" in text
    assert text.splitlines()[-1] == summary.closing_line()


def test_unencodable_marks_fall_back_to_ascii() -> None:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii")
    summary = feed(ConsoleReporter(out), mixed_results())
    out.flush()
    text = raw.getvalue().decode("ascii")
    assert "+ weather/sunny" in text and "x weather/rain" in text and "o weather/judge" in text
    assert text.splitlines()[-1] == summary.closing_line()


# -- the grid: several trials or variants ------------------------------------------------------


def grid_results() -> list:
    return [
        trial("weather/rain", "passed", "small", 0),
        trial("weather/rain", "failed", "small", 1, reason="reply did not include 'Sunny'"),
        trial("weather/rain", "passed", "small", 2),
        trial("weather/rain", "passed", "large", 0),
        trial("weather/rain", "void", "large", 1, reason="judge could not answer"),
        trial("weather/rain", "passed", "large", 2),
        trial("weather/sunny", "passed", "small", 0),
        trial("weather/sunny", "passed", "small", 1),
        trial("weather/sunny", "passed", "small", 2),
        trial("weather/sunny", "void", "large", 0, reason="harness could not start"),
        trial("weather/sunny", "void", "large", 1, reason="harness could not start"),
        trial("weather/sunny", "void", "large", 2, reason="harness could not start"),
    ]


def test_grid_prints_each_cell_when_its_last_trial_finishes() -> None:
    results = grid_results()
    out = io.StringIO()
    reporter = ConsoleReporter(out)
    reporter.on_run_start(run_info(results))
    for r in results[:2]:
        reporter.on_trial_end(r)
    assert out.getvalue() == ""  # the cell has one trial to go
    reporter.on_trial_end(results[2])
    lines = out.getvalue().splitlines()
    assert lines[0] == "✗ weather/rain  small  2/3 passed"
    assert lines[1] == "    ✗ #1  failed: reply did not include 'Sunny'"


def test_grid_shows_void_trials_apart_with_their_reasons() -> None:
    out = io.StringIO()
    feed(ConsoleReporter(out), grid_results())
    lines = out.getvalue().splitlines()
    assert "✓ weather/rain  large  2/2 passed  1 void" in lines
    assert "    ○ #1 void: judge could not answer" in lines
    assert "○ weather/sunny  large  not measured  3 void" in lines
    assert "    ○ #0, #1, #2 void: harness could not start" in lines
    tail = lines[lines.index("Void trials (4, not counted in pass rates)") :]
    assert "  ○ weather/sunny  large  #0, #1, #2: harness could not start" in tail
    assert "  ○ weather/rain  large  #1: judge could not answer" in tail


def test_grid_final_table_and_variant_pass_rates() -> None:
    out = io.StringIO()
    summary = feed(ConsoleReporter(out), grid_results())
    lines = out.getvalue().splitlines()
    at = lines.index("case           small               large")
    # Each cell: passed/measured, the pass rate and its 95% Wilson interval; none when unmeasured.
    assert lines[at + 1] == "weather/rain   2/3 67% [21–94%]    2/2 100% [34–100%] ○1"
    assert lines[at + 2] == "weather/sunny  3/3 100% [44–100%]  0/0 – ○3"
    by_variant = lines[lines.index("Pass rate by variant") + 1 :]
    # The mean of per-case rates; two cases leave the cluster-robust interval wide open.
    assert by_variant[0] == "  small  83% [0–100%]  mean over 2 cases, 5/6 trials"
    assert by_variant[1] == "  large  100% [34–100%]  mean over 1 case, 2/2 trials  (4 void, 67%)"
    assert lines[-1] == summary.closing_line() == "7 passed, 1 failed, 4 void"


def test_grid_with_one_trial_per_cell_and_several_variants() -> None:
    results = [trial("a", "passed", "small"), trial("a", "failed", "large", reason="no")]
    out = io.StringIO()
    feed(ConsoleReporter(out), results)
    lines = out.getvalue().splitlines()
    assert "✓ a  small  1/1 passed" in lines
    assert "✗ a  large  0/1 passed" in lines
    assert "    ✗ #0  failed: no" in lines


def test_grid_cell_cut_short_by_an_interrupt_is_reported_at_the_end() -> None:
    done = [trial("a", "passed", "small", 0)]
    out = io.StringIO()
    info = run_info(done, trials=3)
    summary = feed(
        ConsoleReporter(out), done, info=info, summary=summary_for(done, interrupted=True)
    )
    lines = out.getvalue().splitlines()
    assert "✓ a  1/1 passed  (2 not run)" in lines  # one variant: the table names it
    assert lines[-2] == "Interrupted: 1 of 3 trials finished; finished trials are kept."
    assert lines[-1] == summary.closing_line()


def test_grid_details_are_capped_per_cell() -> None:
    results = [trial("a", "failed", "small", n, reason=f"bad {n}") for n in range(6)]
    out = io.StringIO()
    feed(ConsoleReporter(out), results)
    text = out.getvalue()
    assert "#2  failed: bad 2" in text and "#3  failed" not in text
    assert "… 3 more not passed (see the trial artifacts)" in text


def test_grid_log_prefix_names_variant_and_trial() -> None:
    out = io.StringIO()
    feed(ConsoleReporter(out, verbose=True), grid_results(), logs={"weather/rain": ["hi"]})
    assert "weather/rain [small #1] | hi" in out.getvalue().splitlines()


def test_scored_with_several_soft_misses() -> None:
    r = trial(
        "c", "scored", score=0.5, assertions=[soft_miss("a", 0.4, 0.8), soft_miss("b", 0.6, 0.7)]
    )
    text, _ = run_plain([r])
    assert "~ c  score 0.50 (2 soft checks below threshold)" in text
    assert "    a: score 0.40 < 0.80" in text and "    b: score 0.60 < 0.70" in text


def test_ansi_pattern_sanity() -> None:
    assert ANSI.sub("", "\x1b[31mx\x1b[0m\x1b[2A\x1b[J") == "x"


def test_control_characters_from_trials_are_shown_escaped() -> None:
    r = trial("c", "failed", reason="red \x1b[31mtext\x1b[0m\rover")
    out = io.StringIO()
    feed(ConsoleReporter(out, verbose=True), [r], logs={"c": ["\x1b[2Jclear"]})
    text = out.getvalue()
    assert "\x1b" not in text and "\r" not in text
    assert "c | \\x1b[2Jclear" in text
    assert "failed: red \\x1b[31mtext\\x1b[0m\\rover" in text


def test_grid_details_trials_that_failed_alike_once() -> None:
    failure = gate_failure("includes", "Rain", "Sunny", "no rain")
    results = [
        trial("a", "failed", "small", n, reason="no rain", assertions=[failure]) for n in range(3)
    ]
    out = io.StringIO()
    feed(ConsoleReporter(out), results)
    lines = out.getvalue().splitlines()
    assert "    ✗ #0, #1, #2  failed: no rain" in lines
    assert sum(1 for line in lines if "expected: 'Rain'" in line) == 1


def test_a_trials_score_is_the_same_number_in_console_json_junit_and_record(tmp_path: Path) -> None:
    """One definition: the mean of the trial's soft checks' scores, wherever it is shown."""
    import json
    import xml.etree.ElementTree as ET

    from anpord.results import summary_json, write_junit

    checks = [
        soft_miss("similarity", 0.2, 0.8, label="tone"),
        AssertionRecord(name="similarity", kind="soft", status="passed", score=0.48, threshold=None,
                        label="recorded only"),
    ]
    scored = trial("weather/tone", "scored", score=0.34, assertions=checks)
    passed = trial("weather/sunny", score=0.48, assertions=[checks[1]])
    text, _ = run_plain([scored, passed])
    lines = text.splitlines()
    assert "~ weather/tone  score 0.34 (tone 0.20 < 0.80)" in lines
    assert any(line.startswith("✓ weather/sunny") and line.endswith("score 0.48") for line in lines)
    rs = [scored, passed]
    doc = json.loads(summary_json(summary_for(rs), rs))
    by_case = {c["case_id"]: c["results"][0]["score"] for c in doc["cells"]}
    assert by_case == {"weather/tone": 0.34, "weather/sunny": 0.48}
    write_junit(tmp_path / "j.xml", summary_for(rs), rs)
    scores = {
        case.get("classname"): case.find("properties/property[@name='score']").get("value")
        for case in ET.parse(tmp_path / "j.xml").getroot().iter("testcase")
    }
    assert scores == {"weather/tone": "0.3400", "weather/sunny": "0.4800"}
    assert scored.to_dict()["score"] == 0.34
