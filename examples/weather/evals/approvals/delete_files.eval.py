"""HITL with several requests at once, in a workspace filled by files({...})."""

from anpord import define_eval, files


@define_eval(
    tags=["hitl"], source=files({"old.log": "stale\n", "notes.txt": "keep me\n", "tmp.txt": "x\n"})
)
async def test(t):
    await t.send("Delete old.log and tmp.txt")
    t.parked()
    # One pending request per file; respond_all answers them all in one turn.
    assert len(t.pending_input_requests) == 2
    await t.require_input_request(tool_name="delete_file", input={"path": "old.log"})

    await t.respond_all("approve")
    t.called_tool("delete_file", count=2)
    t.no_failed_actions()
    assert not (t.workspace / "old.log").exists()
    assert not (t.workspace / "tmp.txt").exists()
    assert (t.workspace / "notes.txt").read_text() == "keep me\n"
