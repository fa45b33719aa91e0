"""The agent asks before deleting: the turn parks, the eval answers, the agent carries on."""

from anpord import define_eval


@define_eval
async def approved(t):
    parked = await t.send("delete notes.txt")
    assert parked.status == "waiting"
    request = await t.require_input_request(tool_name="delete_file", input={"path": "notes.txt"})
    assert request.option_ids == ["approve", "deny"]
    turn = await t.respond(request.respond("approve"))
    turn.called_tool("delete_file", input={"path": "notes.txt"}, status="completed")
    t.message_includes("Deleted notes.txt.")
    assert t.pending_input_requests == []
