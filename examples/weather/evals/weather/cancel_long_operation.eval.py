"""In-flight cancel: start a turn, wait until the slow tool is running, cancel it."""

from anpord import define_eval


@define_eval(tags=["cancel"], timeout=20)
async def test(t):
    live = await t.start("Run the long operation, please.")
    await live.wait_for_event("tool.called", data={"name": "long_operation"})

    assert await live.cancel() is True
    turn = await live.result()

    assert turn.status == "cancelled"
    turn.event_order(["tool.called", "turn.cancelled", "session.waiting"])
    turn.called_tool("long_operation", status="failed")  # the tool was stopped, not finished
    turn.not_event("turn.completed")

    # The session is still usable after a cancel.
    after = await t.send("What is the weather in Paris?")
    after.called_tool("get_weather", input={"city": "Paris"})
    after.message_includes("Windy")
