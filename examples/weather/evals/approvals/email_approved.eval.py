"""HITL: sending an email parks the session on an approval; approving sends it."""

from anpord import define_eval
from anpord.expect import matches


@define_eval(tags=["hitl"])
async def test(t):
    turn = await t.send("Email the Brooklyn forecast to sam@example.com")
    turn.parked()
    turn.not_called_tool("send_email")  # nothing is sent before the approval

    request = await t.require_input_request(tool_name="send_email", prompt="sam@example.com")
    t.check(request.option_ids, ["approve", "deny"])
    t.check(request.input, matches({"to": "sam@example.com", "subject": "Weather in Brooklyn"}))

    done = await t.respond(request.respond("approve"))
    done.called_tool("send_email", input={"to": "sam@example.com"}, output={"status": "sent"})
    done.message_includes("emailed the Brooklyn forecast")
    t.succeeded()
    t.event_order(["input.requested", "session.waiting", "input.resolved", "tool.result"])
