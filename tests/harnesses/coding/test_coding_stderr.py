"""A failed CLI's reason names the first meaningful stderr line, not the last."""

from __future__ import annotations

from coding_support import STREAMS

from anpord.harnesses.coding._stderr import GEMINI_DEBUG_LINE, stderr_reason


def test_the_cause_before_a_help_text_is_the_reason() -> None:
    recorded = (STREAMS / "gemini-cli/recorded__gemini-0.61__unknown-argument.stderr").read_text()
    assert recorded.strip().splitlines()[-1].lstrip().startswith("-h, --help")
    assert stderr_reason(recorded) == "Unknown arguments: max-session-turns, maxSessionTurns"


def test_a_node_error_with_its_stack_and_object_dump_is_its_first_line() -> None:
    stderr = (
        "Warning: 256-color support not detected. Using a terminal with at least 256-color support\n"
        "YOLO mode is enabled. All tool calls will be automatically approved.\n"
        "Error: connect ECONNREFUSED 127.0.0.1:9\n"
        "    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1607:16) {\n"
        "  errno: -111,\n"
        "  code: 'ECONNREFUSED',\n"
        "}\n"
    )
    assert stderr_reason(stderr) == "Error: connect ECONNREFUSED 127.0.0.1:9"


def test_an_error_line_comes_before_debug_notes_and_a_colon_takes_the_next_line() -> None:
    stderr = "Hook registry initialized with 0 hook entries\nError:\n  ignored indent\nbad token\n"
    assert stderr_reason(stderr) == "Error: bad token"


def test_without_a_meaningful_first_line_the_last_one_is_used() -> None:
    assert stderr_reason("\n}\n", "early\n   at x\nlate cause\n}\n") == "late cause"
    assert stderr_reason("", "") == ""


def test_gemini_debug_trace_lines_are_recognised() -> None:
    assert GEMINI_DEBUG_LINE.match("[PolicyEngine.check] Validating shell command: 1 parts")
    assert GEMINI_DEBUG_LINE.match("[DEBUG] [MemoryDiscovery] Starting upward search")
    assert not GEMINI_DEBUG_LINE.match("Error: [API Error: not found]")
