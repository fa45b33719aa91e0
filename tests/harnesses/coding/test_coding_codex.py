"""Codex's ``exec --json`` streams (item stream and the older msg stream) into anpord events."""

from __future__ import annotations

from coding_support import anpord_events, line, of_type, run_stream, stream_lines

from anpord.harnesses.coding import ThreadUsage

AGENTCMD = "codex/jnarowski__agentcmd__stream-output-"
MARION = "codex/RyanKim17920__marion__"


def test_a_plain_answer_with_reasoning_kept_raw() -> None:
    events, end = run_stream("codex", stream_lines(AGENTCMD + "1.jsonl"))
    assert anpord_events(events) == [
        ("message.completed", {"role": "assistant", "text": "4"}),
        (
            "usage",
            {"input_tokens": 2946, "output_tokens": 7, "cost": None, "cached_input_tokens": 0},
        ),
    ]
    reasoning = [e for e in events if e.type == "codex.item.completed"]
    assert reasoning[0].data["raw"]["item"]["text"] == "**Providing simple answer**"
    assert [e.type for e in events if "raw" in e.data] == [
        "codex.thread.started",
        "codex.turn.started",
        "codex.item.completed",
        "codex.turn.completed",
    ]
    assert end.status == "completed" and end.message == "4"
    assert end.resume == "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"
    assert end.usage == {"input_tokens": 2946, "output_tokens": 7, "cached_input_tokens": 0}


def test_a_command_is_called_once_and_completes_with_its_exit_code() -> None:
    events, end = run_stream("codex", stream_lines(AGENTCMD + "2.jsonl"))
    listing = "stream-output-1.jsonl\nstream-output-2.jsonl\ntest.js\n"
    assert anpord_events(events)[:3] == [
        (
            "tool.called",
            {"call_id": "item_1", "name": "command_execution", "input": {"command": "ls"}},
        ),
        (
            "tool.result",
            {
                "call_id": "item_1",
                "name": "command_execution",
                "output": listing,
                "status": "completed",
                "error": None,
            },
        ),
        (
            "command.completed",
            {"command": "ls", "exit_code": 0, "output": listing, "call_id": "item_1"},
        ),
    ]
    assert end.message == "Files here: `stream-output-1.jsonl`, `stream-output-2.jsonl`, `test.js`."
    assert end.usage == {"input_tokens": 6040, "output_tokens": 129, "cached_input_tokens": 4992}


def test_a_quoted_command_is_unwrapped_from_its_shell() -> None:
    events, _ = run_stream("codex", stream_lines(AGENTCMD + "4.jsonl"))
    (command,) = of_type(events, "command.completed")
    assert command["command"] == "cat test.js"
    assert command["output"] == "console.log('Hello World');\n" and command["exit_code"] == 0


def test_mixed_stderr_output_under_zsh_is_still_exit_0() -> None:
    events, end = run_stream("codex", stream_lines(AGENTCMD + "5.jsonl"))
    (command,) = of_type(events, "command.completed")
    assert command["command"] == "ls" and command["exit_code"] == 0
    assert command["output"].startswith("/opt/homebrew/Library/Homebrew/cmd/shellenv.sh: line 18")
    assert end.message is not None and end.message.startswith("Found 1 text file `hello.txt`")


def test_a_file_change_reported_only_on_completion() -> None:
    events, end = run_stream(
        "codex", stream_lines(AGENTCMD + "3.jsonl"), workspace="/private/tmp/codex-research-test"
    )
    changes = {"changes": [{"path": "/private/tmp/codex-research-test/hello.txt", "kind": "add"}]}
    assert anpord_events(events)[:3] == [
        ("tool.called", {"call_id": "item_1", "name": "file_change", "input": changes}),
        (
            "tool.result",
            {
                "call_id": "item_1",
                "name": "file_change",
                "output": changes,
                "status": "completed",
                "error": None,
            },
        ),
        ("files.changed", {"paths": ["hello.txt"]}),
    ]
    assert end.message == "Created `hello.txt` containing `Hello from Codex`."
    # Without the workspace the path stays as codex gave it.
    events, _ = run_stream("codex", stream_lines(AGENTCMD + "3.jsonl"))
    assert of_type(events, "files.changed") == [
        {"paths": ["/private/tmp/codex-research-test/hello.txt"]}
    ]


def test_a_file_change_started_and_completed_is_one_call_and_one_change() -> None:
    events, end = run_stream(
        "codex", stream_lines(MARION + "s6-exec-codemode-apply-patch.stream.jsonl")
    )
    # The notice codex prints before its stream is a log line.
    assert events[0].type == "log" and events[0].data == {
        "message": "Reading additional input from stdin...",
        "stream": "stdout",
    }
    assert len(of_type(events, "tool.called")) == 1 and len(of_type(events, "tool.result")) == 1
    assert of_type(events, "files.changed") == [
        {"paths": ["<HOME>/Desktop/CODING/marion/spikes/s6/wt/a.rs"]}
    ]
    assert end.status == "completed" and end.message == "patched" and end.resume == "<UUID>"
    assert end.usage == {
        "input_tokens": 0,
        "output_tokens": 0,
        "cached_input_tokens": 0,
        "cache_write_input_tokens": 0,
        "reasoning_output_tokens": 0,
    }


def test_an_mcp_tool_call_with_its_result_content() -> None:
    events, end = run_stream("codex", stream_lines(MARION + "s6-exec-mcp-report.stream.jsonl"))
    assert of_type(events, "tool.called") == [
        {
            "call_id": "item_0",
            "name": "marion.report",
            "input": {"narrative": "s6 probe: reporting via MCP"},
            "server": "marion",
        }
    ]
    assert of_type(events, "tool.result") == [
        {
            "call_id": "item_0",
            "name": "marion.report",
            "output": "contract recorded",
            "status": "completed",
            "error": None,
            "server": "marion",
        }
    ]
    assert end.message == "done"


def test_the_last_of_two_agent_messages_is_the_answer() -> None:
    events, end = run_stream("codex", stream_lines(MARION + "s4-stream-decision-block.jsonl"))
    assert [m["text"] for m in of_type(events, "message.completed")] == ["alpha", "GOLF"]
    assert end.status == "completed" and end.message == "GOLF"
    assert end.usage == {
        "input_tokens": 30111,
        "output_tokens": 11,
        "cached_input_tokens": 22016,
        "cache_write_input_tokens": 0,
        "reasoning_output_tokens": 0,
    }


def test_reconnect_errors_then_turn_failed_from_a_current_codex() -> None:
    events, end = run_stream(
        "codex", stream_lines("codex/recorded__canned-model__reconnect-then-fail.jsonl"), 1
    )
    assert end.status == "failed"
    assert end.error == "stream disconnected before completion: error sending request"
    assert end.resume == "01a22b3d-da86-7482-84d5-9dfae6158a8a"
    assert end.usage == {}
    # The error item is a notice, kept raw; no anpord event claims success.
    assert anpord_events(events) == []
    assert sum(1 for e in events if e.type == "codex.error") == 6


def test_an_error_followed_by_turn_completed_was_only_a_retry() -> None:
    lines = [
        line(type="thread.started", thread_id="t1"),
        line(type="error", message="Reconnecting... 1/5"),
        line(type="item.completed", item={"id": "item_0", "type": "agent_message", "text": "fine"}),
        line(
            type="turn.completed",
            usage={"input_tokens": 5, "cached_input_tokens": 0, "output_tokens": 1},
        ),
    ]
    _, end = run_stream("codex", lines)
    assert end.status == "completed" and end.message == "fine" and end.error is None


def test_a_stream_cut_after_an_error_names_it() -> None:
    lines = [
        line(type="thread.started", thread_id="t1"),
        line(type="error", message="quota exceeded"),
    ]
    _, end = run_stream("codex", lines, exit_code=1)
    assert end.status == "failed"
    assert (
        end.error
        == "codex exited with code 1 before its final turn.completed event (last error: quota exceeded)"
    )


def test_declined_and_failed_commands() -> None:
    lines = [
        line(
            type="item.completed",
            item={
                "id": "a",
                "type": "command_execution",
                "command": "bash -lc 'rm -rf /'",
                "aggregated_output": "",
                "exit_code": None,
                "status": "declined",
            },
        ),
        line(
            type="item.completed",
            item={
                "id": "b",
                "type": "command_execution",
                "command": ["bash", "-lc", "false"],
                "aggregated_output": "",
                "exit_code": 1,
                "status": "failed",
            },
        ),
    ]
    events, _ = run_stream("codex", lines)
    results = of_type(events, "tool.result")
    assert [(r["status"], r["error"]) for r in results] == [
        ("failed", "the command was declined"),
        ("failed", "exit code 1"),
    ]
    # A declined command never ran: no command.completed for it.
    assert of_type(events, "command.completed") == [
        {"command": "false", "exit_code": 1, "output": "", "call_id": "b"}
    ]


def test_the_usage_of_a_resumed_thread_is_what_this_run_added() -> None:
    first = [
        line(type="thread.started", thread_id="th"),
        line(
            type="turn.completed",
            usage={"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 50},
        ),
    ]
    _, end = run_stream("codex", first)
    assert end.usage == {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 50}

    from anpord.harnesses.coding import CodexStreamParser

    p1 = CodexStreamParser()
    for text in first:
        p1.feed(text)
    assert p1.thread_usage == ThreadUsage(
        "th", {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 50}
    )

    # The resumed run reports the thread's running totals: 1000 + 1500 in, 50 + 20 out.
    second = [
        line(type="thread.started", thread_id="th"),
        line(
            type="turn.completed",
            usage={"input_tokens": 2500, "cached_input_tokens": 900, "output_tokens": 70},
        ),
    ]
    events, _ = run_stream("codex", second, thread_usage_before=p1.thread_usage)
    assert of_type(events, "usage") == [
        {"input_tokens": 1500, "output_tokens": 20, "cost": None, "cached_input_tokens": 700}
    ]
    # A different thread (the resume did not take) counts from zero.
    events, _ = run_stream(
        "codex",
        [line(type="thread.started", thread_id="other"), second[1]],
        thread_usage_before=p1.thread_usage,
    )
    assert of_type(events, "usage")[0]["input_tokens"] == 2500


def test_the_older_msg_stream() -> None:
    lines = [
        line(model="codex-mini-latest", sandbox="danger-full-access", workdir="/w"),
        line(prompt="list files"),
        line(
            id="0",
            msg={
                "type": "session_configured",
                "session_id": "3cdcc4df",
                "model": "codex-mini-latest",
            },
        ),
        line(id="1", msg={"type": "task_started"}),
        line(id="1", msg={"type": "agent_reasoning", "text": "**Listing**"}),
        line(
            id="1",
            msg={
                "type": "exec_command_begin",
                "call_id": "c1",
                "command": ["bash", "-lc", "ls -1"],
                "cwd": "/w",
            },
        ),
        line(
            id="1",
            msg={
                "type": "exec_command_end",
                "call_id": "c1",
                "stdout": "a.txt\n",
                "stderr": "",
                "exit_code": 0,
            },
        ),
        line(
            id="1",
            msg={
                "type": "patch_apply_begin",
                "call_id": "p1",
                "auto_approved": True,
                "changes": {"/w/README.md": {"update": {"unified_diff": "@@", "move_path": None}}},
            },
        ),
        line(
            id="1",
            msg={
                "type": "patch_apply_end",
                "call_id": "p1",
                "stdout": "Success.",
                "stderr": "",
                "success": True,
            },
        ),
        line(
            id="1",
            msg={
                "type": "mcp_tool_call_begin",
                "call_id": "m1",
                "invocation": {"server": "kanban", "tool": "list_projects", "arguments": {}},
            },
        ),
        line(
            id="1",
            msg={
                "type": "mcp_tool_call_end",
                "call_id": "m1",
                "invocation": {"server": "kanban", "tool": "list_projects", "arguments": {}},
                "result": {
                    "Ok": {"content": [{"type": "text", "text": "2 projects"}], "isError": False}
                },
            },
        ),
        line(
            id="1",
            msg={
                "type": "token_count",
                "input_tokens": 1674,
                "cached_input_tokens": 1627,
                "output_tokens": 384,
                "reasoning_output_tokens": 384,
                "total_tokens": 2058,
            },
        ),
        line(id="1", msg={"type": "agent_message", "message": "Here are your files."}),
        line(id="1", msg={"type": "task_complete", "last_agent_message": "Here are your files."}),
    ]
    events, end = run_stream("codex", lines, workspace="/w")
    assert anpord_events(events) == [
        (
            "tool.called",
            {"call_id": "c1", "name": "command_execution", "input": {"command": "ls -1"}},
        ),
        (
            "tool.result",
            {
                "call_id": "c1",
                "name": "command_execution",
                "output": "a.txt\n",
                "status": "completed",
                "error": None,
            },
        ),
        (
            "command.completed",
            {"command": "ls -1", "exit_code": 0, "output": "a.txt\n", "call_id": "c1"},
        ),
        (
            "tool.called",
            {
                "call_id": "p1",
                "name": "file_change",
                "input": {"changes": [{"path": "/w/README.md"}]},
            },
        ),
        (
            "tool.result",
            {
                "call_id": "p1",
                "name": "file_change",
                "output": "Success.",
                "status": "completed",
                "error": None,
            },
        ),
        ("files.changed", {"paths": ["README.md"]}),
        (
            "tool.called",
            {"call_id": "m1", "name": "kanban.list_projects", "input": {}, "server": "kanban"},
        ),
        (
            "tool.result",
            {
                "call_id": "m1",
                "name": "kanban.list_projects",
                "output": "2 projects",
                "status": "completed",
                "error": None,
                "server": "kanban",
            },
        ),
        (
            "usage",
            {
                "input_tokens": 1674,
                "output_tokens": 384,
                "cost": None,
                "cached_input_tokens": 1627,
                "reasoning_output_tokens": 384,
            },
        ),
        ("message.completed", {"role": "assistant", "text": "Here are your files."}),
    ]
    assert [e.type for e in events[:2]] == ["codex.untyped", "codex.untyped"]
    assert (
        end.status == "completed"
        and end.message == "Here are your files."
        and end.resume == "3cdcc4df"
    )


def test_the_older_msg_stream_fails_on_error_and_counts_running_totals_once() -> None:
    total = {"input_tokens": 100, "cached_input_tokens": 0, "output_tokens": 10}
    lines = [
        line(
            id="1",
            msg={
                "type": "token_count",
                "info": {"total_token_usage": total, "last_token_usage": total},
            },
        ),
        line(
            id="1",
            msg={
                "type": "token_count",
                "info": {"total_token_usage": {**total, "input_tokens": 250, "output_tokens": 30}},
            },
        ),
        line(
            id="1",
            msg={"type": "error", "message": "Missing environment variable: `OPENAI_API_KEY`."},
        ),
    ]
    events, end = run_stream("codex", lines, exit_code=1)
    assert [u["input_tokens"] for u in of_type(events, "usage")] == [100, 150]
    assert end.status == "failed"
    assert end.error == (
        "codex exited with code 1 before its final task_complete event "
        "(last error: Missing environment variable: `OPENAI_API_KEY`.)"
    )
    assert end.usage["input_tokens"] == 250 and end.usage["output_tokens"] == 30
