"""HITL: denying the approval means the email is never sent."""

from anpord import define_eval


@define_eval(tags=["hitl"])
async def test(t):
    await t.send("Please send the London weather to ops@example.com")
    t.parked()
    await t.require_input_request(tool_name="send_email")

    await t.respond_all("deny")
    t.not_called_tool("send_email")
    t.event("input.resolved", data={"option_id": "deny"})
    t.message_includes("did not send")
    assert t.pending_input_requests == []
