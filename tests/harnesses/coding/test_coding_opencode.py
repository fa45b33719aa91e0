"""OpenCode's ``run --format json`` stream into anpord events."""

from __future__ import annotations

from coding_support import anpord_events, line, of_type, run_stream, stream_lines

SID = "ses_09ec7fc10ffekAtgUWHv9M6Y0T"


def test_a_recorded_answer_with_token_counts_and_an_unpriced_model() -> None:
    events, end = run_stream(
        "opencode", stream_lines("opencode/davidzoufaly__noldor__opencode-events.jsonl")
    )
    assert anpord_events(events) == [
        ("message.completed", {"role": "assistant", "text": "alpha\nbravo\ncharlie"}),
        # input 17913 + cache read 1664; output 9 + reasoning 29; cost 0 next to tokens: unknown.
        (
            "usage",
            {
                "input_tokens": 19577,
                "output_tokens": 38,
                "cost": None,
                "cached_input_tokens": 1664,
                "cache_write_input_tokens": 0,
                "reasoning_output_tokens": 29,
            },
        ),
    ]
    assert [e.type for e in events if "raw" in e.data] == [
        "opencode.step_start",
        "opencode.step_finish",
    ]
    # No done line (an older opencode): the last step stopped by itself, so the turn completed.
    assert (
        end.status == "completed" and end.message == "alpha\nbravo\ncharlie" and end.resume == SID
    )
    assert "cost" not in end.usage


def _tool(call: str, tool: str, status: str, tool_input: dict, **state: object) -> str:
    return line(
        type="tool_use",
        timestamp=1,
        sessionID="s1",
        part={
            "id": f"prt_{call}",
            "sessionID": "s1",
            "messageID": "m1",
            "type": "tool",
            "callID": call,
            "tool": tool,
            "state": {"status": status, "input": tool_input, **state},
        },
    )


def _step(reason: str, cost: float = 0.01) -> list[str]:
    return [
        line(type="step_start", timestamp=1, sessionID="s1", part={"type": "step-start"}),
        line(
            type="step_finish",
            timestamp=2,
            sessionID="s1",
            part={
                "type": "step-finish",
                "reason": reason,
                "cost": cost,
                "tokens": {
                    "input": 100,
                    "output": 10,
                    "reasoning": 0,
                    "cache": {"read": 0, "write": 0},
                },
            },
        ),
    ]


def test_tools_commands_and_file_changes_then_done() -> None:
    lines = [
        _step("tool-calls")[0],
        _tool(
            "c1",
            "bash",
            "completed",
            {"command": "pytest -q", "description": "tests"},
            output="1 failed",
            metadata={"output": "1 failed", "exit": 1, "description": "tests"},
        ),
        _tool("c2", "write", "completed", {"filePath": "/w/notes.txt", "content": "x"}, output=""),
        # opencode 1.18's bash tool says "(no output)" for a command that printed nothing.
        _tool(
            "c6",
            "bash",
            "completed",
            {"command": "true", "description": "nothing"},
            output="(no output)",
            metadata={"output": "(no output)", "exit": 0, "description": "nothing"},
        ),
        _tool(
            "c3",
            "edit",
            "error",
            {"filePath": "/w/a.py", "oldString": "a", "newString": "b"},
            error="oldString not found in content",
        ),
        _tool(
            "c4",
            "apply_patch",
            "completed",
            {"patchText": "*** Begin Patch\n*** Add File: b.py\n+x\n*** End Patch"},
            output="Success.",
            metadata={"files": [{"filePath": "/w/b.py", "type": "add"}]},
        ),
        _tool(
            "c5",
            "patch",
            "completed",
            {
                "patchText": "*** Begin Patch\n*** Update File: c.py\n*** Move to: d.py\n@@\n-a\n+b\n*** End Patch"
            },
            output="Success.",
        ),
        _step("tool-calls")[1],
        *_step("stop"),
        line(
            type="text",
            timestamp=3,
            sessionID="s1",
            part={"type": "text", "text": "Tests fail; fixed notes."},
        ),
        line(type="done", timestamp=4, sessionID="s1", reason="idle", rejected=[]),
    ]
    events, end = run_stream("opencode", lines, workspace="/w")
    assert of_type(events, "command.completed") == [
        {"command": "pytest -q", "exit_code": 1, "output": "1 failed", "call_id": "c1"},
        {"command": "true", "exit_code": 0, "output": "", "call_id": "c6"},
    ]
    assert of_type(events, "files.changed") == [
        {"paths": ["notes.txt"]},
        {"paths": ["b.py"]},
        {"paths": ["c.py", "d.py"]},
    ]
    results = of_type(events, "tool.result")
    assert [(r["name"], r["status"], r["error"]) for r in results] == [
        ("bash", "failed", "1 failed"),  # exit 1: failed, though opencode says completed
        ("write", "completed", None),
        ("bash", "completed", None),
        ("edit", "failed", "oldString not found in content"),
        ("apply_patch", "completed", None),
        ("patch", "completed", None),
    ]
    assert [c["call_id"] for c in of_type(events, "tool.called")] == ["c1", "c2", "c6", "c3", "c4", "c5"]
    assert (
        end.status == "completed"
        and end.message == "Tests fail; fixed notes."
        and end.resume == "s1"
    )
    assert end.usage["cost"] == 0.02 and end.usage["input_tokens"] == 200


def test_a_stream_cut_after_a_tool_step_is_failed() -> None:
    lines = [*_step("tool-calls"), _step("stop")[0]]
    _, end = run_stream("opencode", lines, exit_code=None)
    assert end.status == "failed" and end.error == "opencode was killed before its final done event"
    # Usage of the steps that did finish is kept.
    assert end.usage["input_tokens"] == 100


def test_an_error_event_fails_the_turn() -> None:
    lines = [
        *_step("stop"),
        line(
            type="error",
            timestamp=5,
            sessionID="s1",
            error={
                "name": "ProviderAuthError",
                "data": {"providerID": "anthropic", "message": "invalid x-api-key"},
            },
        ),
    ]
    _, end = run_stream("opencode", lines, exit_code=1)
    assert end.status == "failed" and end.error == "ProviderAuthError: invalid x-api-key"


def test_the_sign_in_follows_the_models_provider(tmp_path) -> None:
    import asyncio

    from anpord._fs import HostFiles
    from anpord.harnesses.coding import provider_keys
    from anpord.harnesses.coding import provider_sign_in as sign_in

    def provider_sign_in(model, home, workspace):  # type: ignore[no-untyped-def]
        return asyncio.run(sign_in(model, home, workspace, HostFiles()))

    home, workspace = tmp_path / "home", tmp_path / "ws"
    (home / ".config/opencode").mkdir(parents=True)
    workspace.mkdir()
    assert provider_keys("anthropic/claude-sonnet-4-5") == ("ANTHROPIC_API_KEY",)
    assert provider_keys("google/gemini-2.5-pro") == ("GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY")
    assert provider_keys("fire-works/m") == ("FIRE_WORKS_API_KEY",)  # models.dev's naming
    assert provider_sign_in("openai/gpt-5", home, workspace).alternatives == (("OPENAI_API_KEY",),)
    # A JSONC file in HOME naming the key's variable.
    (home / ".config/opencode/opencode.jsonc").write_text(
        '{\n  // mine\n  "provider": {"gw": {"options": {"apiKey": "{env:GW_KEY}"},},},\n}\n'
    )
    assert provider_sign_in("gw/m", home, workspace).alternatives == (("GW_KEY",),)
    # A stored sign-in for the provider (opencode auth login) is enough; one for another is not.
    (home / ".local/share/opencode").mkdir(parents=True)
    (home / ".local/share/opencode/auth.json").write_text('{"openai": {"type": "api", "key": "k"}}')
    assert provider_sign_in("openai/gpt-5", home, workspace).signed_in
    assert not provider_sign_in("anthropic/claude", home, workspace).signed_in
