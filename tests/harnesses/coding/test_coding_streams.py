"""What every coding-agent parser must survive: garbled and cut lines, floods, unknown event types,
streams that stop mid-way — and every recorded stream in the fixtures folder."""

from __future__ import annotations

import json

import pytest
from coding_support import STREAMS, line, run_stream, stream_lines

from anpord.harnesses.coding import CODING_CLIS

CLIS = sorted(CODING_CLIS)
FOLDERS = {
    "claude-code": "claude",
    "codex": "codex",
    "gemini-cli": "gemini",
    "opencode": "opencode",
}

# One complete, successful run per CLI, to cut and garble.
COMPLETE = {
    "claude": "claude-code/mixofreality-studio__archistrator__success_with_tools.jsonl",
    "codex": "codex/jnarowski__agentcmd__stream-output-2.jsonl",
    "gemini": "gemini-cli/recorded__canned-model__tools.jsonl",
    "opencode": "opencode/davidzoufaly__noldor__opencode-events.jsonl",
}

# How each fixture ends: status and (part of) the error.
ENDINGS = {
    "claude-code/charlieyou__claude-agent-sdk-gleam__assistant_message.json": (
        "failed",
        "final result event",
    ),
    "claude-code/charlieyou__claude-agent-sdk-gleam__result_success.json": ("completed", None),
    "claude-code/charlieyou__claude-agent-sdk-gleam__system_message.json": (
        "failed",
        "final result event",
    ),
    "claude-code/charlieyou__claude-agent-sdk-gleam__user_message.json": (
        "failed",
        "final result event",
    ),
    "claude-code/mixofreality-studio__archistrator__failure.jsonl": ("failed", "API error 404"),
    "claude-code/mixofreality-studio__archistrator__success_with_subagent.jsonl": (
        "completed",
        None,
    ),
    "claude-code/mixofreality-studio__archistrator__success_with_tools.jsonl": ("completed", None),
    "claude-code/recorded__canned-model__bash-exit-codes.jsonl": ("completed", None),
    "claude-code/recorded__canned-model__model-not-found.jsonl": ("failed", "API error 404"),
    "claude-code/recorded__canned-model__resumed.jsonl": ("completed", None),
    "claude-code/time4Wiley__claude-flow__hello-world-swarm-excerpt.jsonl": (
        "failed",
        "final result event",
    ),
    "codex/RyanKim17920__marion__s4-stream-decision-block.jsonl": ("completed", None),
    "codex/RyanKim17920__marion__s6-exec-codemode-apply-patch.stream.jsonl": ("completed", None),
    "codex/RyanKim17920__marion__s6-exec-mcp-report.stream.jsonl": ("completed", None),
    "codex/jnarowski__agentcmd__stream-output-1.jsonl": ("completed", None),
    "codex/jnarowski__agentcmd__stream-output-2.jsonl": ("completed", None),
    "codex/jnarowski__agentcmd__stream-output-3.jsonl": ("completed", None),
    "codex/jnarowski__agentcmd__stream-output-4.jsonl": ("completed", None),
    "codex/jnarowski__agentcmd__stream-output-5.jsonl": ("completed", None),
    "codex/recorded__canned-model__reconnect-then-fail.jsonl": ("failed", "stream disconnected"),
    "gemini-cli/recorded__canned-model__model-not-found.jsonl": (
        "failed",
        "no-such-model is not found",
    ),
    "gemini-cli/recorded__canned-model__resumed.jsonl": ("completed", None),
    "gemini-cli/recorded__canned-model__tools.jsonl": ("completed", None),
    "gemini-cli/recorded__gemini-0.61-debug__tools.jsonl": ("completed", None),
    "opencode/davidzoufaly__noldor__opencode-events.jsonl": ("completed", None),
    "opencode/recorded__opencode-1.18.33__bash-exit-codes.jsonl": ("completed", None),
}


def test_every_fixture_file_has_an_expected_ending() -> None:
    files = {
        str(p.relative_to(STREAMS))
        for p in STREAMS.rglob("*")
        if p.is_file() and p.name != "SOURCES.md" and p.suffix != ".stderr"
    }
    assert files == set(ENDINGS)


@pytest.mark.parametrize("relpath", sorted(ENDINGS))
def test_every_fixture_parses_without_unreadable_lines(relpath: str) -> None:
    cli = FOLDERS[relpath.split("/")[0]]
    events, end = run_stream(cli, stream_lines(relpath))
    status, error = ENDINGS[relpath]
    assert end.status == status
    assert (end.error is None) if error is None else (error in (end.error or ""))
    # Every JSON line became events, none of them a line the parser could not read.
    assert not [e for e in events if "error" in e.data and "raw" in e.data]
    json_lines = [t for t in stream_lines(relpath) if t.strip().startswith("{")]
    assert len(events) >= len(json_lines)


@pytest.mark.parametrize("cli", CLIS)
def test_garbled_and_cut_json_lines_are_log_lines(cli: str) -> None:
    lines = stream_lines(COMPLETE[cli])
    garbage = [
        '{"type": "assistant", "message": {"id": "m',
        "not json at all",
        "{",
        "[1, 2, 3]",
        '"a string"',
        "\x00\x01binary\xff",
        "{'single': 'quotes'}",
    ]
    events, end = run_stream(cli, garbage[:3] + lines + garbage[3:])
    logs = [e.data for e in events if e.type == "log"]
    assert [entry["message"] for entry in logs] == garbage
    assert all(entry["stream"] == "stdout" for entry in logs)
    # The stream around the garbage still reads as it did alone.
    _, clean = run_stream(cli, lines)
    assert (end.status, end.message, end.resume) == (clean.status, clean.message, clean.resume)


@pytest.mark.parametrize("cli", CLIS)
def test_a_stream_cut_mid_way_is_a_failed_turn_naming_the_missing_final_event(cli: str) -> None:
    lines = [t for t in stream_lines(COMPLETE[cli]) if t.strip()]
    for cut in range(len(lines) - 1):
        _, end = run_stream(cli, lines[:cut], exit_code=None)
        assert end.status == "failed", (cli, cut)
        assert end.error is not None and "was killed before its final" in end.error
    # Cut in the middle of the last line (the final event itself): still failed.
    last = lines[-1]
    _, end = run_stream(cli, [*lines[:-1], last[: len(last) // 2]], exit_code=0)
    assert end.status == "failed"


@pytest.mark.parametrize("cli", CLIS)
def test_unknown_event_types_and_untyped_objects_are_kept_raw(cli: str) -> None:
    novel = {
        "type": "brand_new_event",
        "payload": {"x": [1, 2]},
        "session_id": "s",
        "sessionID": "s",
    }
    untyped = {"hello": "world"}
    odd_shapes = {
        "type": "assistant",
        "message": "a string where an object goes",
        "item": 7,
        "part": None,
    }
    events, _ = run_stream(cli, [json.dumps(novel), json.dumps(untyped), json.dumps(odd_shapes)])
    assert events[0].type == f"{cli}.brand_new_event" and events[0].data["raw"] == novel
    assert events[1].type == f"{cli}.untyped" and events[1].data["raw"] == untyped
    assert len(events) >= 3 and all("raw" in e.data or e.type == "log" for e in events[2:])


@pytest.mark.parametrize("cli", CLIS)
def test_key_order_does_not_matter(cli: str) -> None:
    lines = stream_lines(COMPLETE[cli])
    reversed_keys = [
        json.dumps(dict(reversed(list(json.loads(t).items())))) if t.strip().startswith("{") else t
        for t in lines
    ]
    a, end_a = run_stream(cli, lines)
    b, end_b = run_stream(cli, reversed_keys)
    strip = lambda evs: [(e.type, {k: v for k, v in e.data.items() if k != "raw"}) for e in evs]
    assert strip(a) == strip(b)
    assert (end_a.status, end_a.message, end_a.resume, end_a.usage) == (
        end_b.status,
        end_b.message,
        end_b.resume,
        end_b.usage,
    )


@pytest.mark.parametrize("cli", CLIS)
def test_a_flood_of_lines_is_read_in_order_without_loss(cli: str) -> None:
    n = 20_000
    flood = [f"progress {i}" for i in range(n)] + [
        json.dumps({"type": "tick", "n": i}) for i in range(n)
    ]
    events, end = run_stream(cli, [*flood, *stream_lines(COMPLETE[cli])])
    logs = [e for e in events if e.type == "log"]
    ticks = [e for e in events if e.type == f"{cli}.tick"]
    assert len(logs) == n and logs[-1].data["message"] == f"progress {n - 1}"
    assert [t.data["raw"]["n"] for t in ticks] == list(range(n))
    assert end.status == "completed"


def test_a_flood_of_answer_chunks_is_capped_not_unbounded() -> None:
    chunk = "x" * 1000
    lines = [line(type="message", role="assistant", content=chunk, delta=True)] * 6000
    events, _ = run_stream("gemini", [*lines, line(type="result", status="success", stats={})])
    (message,) = [e.data["text"] for e in events if e.type == "message.completed"]
    assert len(message) == 4 << 20


@pytest.mark.parametrize(
    ("cli", "final"),
    [
        (
            "claude",
            line(
                type="result",
                subtype="error_during_execution",
                is_error=True,
                result="boom",
                session_id="s",
            ),
        ),
        ("codex", line(type="turn.failed", error={"message": "boom"})),
        (
            "gemini",
            line(type="result", status="error", error={"type": "FatalError", "message": "boom"}),
        ),
        (
            "opencode",
            line(
                type="error",
                sessionID="s",
                error={"name": "UnknownError", "data": {"message": "boom"}},
            ),
        ),
    ],
)
def test_an_error_as_the_final_event_fails_the_turn(cli: str, final: str) -> None:
    _, end = run_stream(cli, [final], exit_code=1)
    assert end.status == "failed" and end.error is not None and "boom" in end.error


@pytest.mark.parametrize("cli", CLIS)
def test_an_empty_stream_is_failed_with_the_exit_code(cli: str) -> None:
    _, end = run_stream(cli, [], exit_code=41)
    assert end.status == "failed"
    assert end.error is not None and end.error.startswith(
        f"{cli} exited with code 41 before its final"
    )
    assert end.usage == {} and end.resume is None
