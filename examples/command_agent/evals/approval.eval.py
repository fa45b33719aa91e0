"""A scripted case: the agent asks before deleting a file; the eval approves."""

from anpord import define_eval, files


@define_eval(source=files({"old.txt": "stale\n"}))
async def test(t):
    await t.send("delete old.txt")
    request = await t.require_input_request(tool_name="delete_file")
    turn = await t.respond((request, "approve"))
    turn.called_tool("delete_file", input={"path": "old.txt"}, status="completed")
    t.message_includes("Deleted old.txt")
    assert not (t.workspace / "old.txt").exists()
