"""Multi-turn: the agent remembers the session; a new session starts from nothing."""

from anpord import define_eval
from anpord.expect import equals, includes


@define_eval(tags=["multi-turn"])
async def test(t):
    first = await t.send("What is the weather in London?")
    first.called_tool("get_weather", input={"city": "London"})
    t.check(first.message, includes("Rainy"))

    # "there" refers back to London: the agent reads it from the session's history.
    second = await t.send("And tomorrow there?")
    await t.require(second.session_id, equals(first.session_id))
    second.called_tool("get_weather", input={"city": "London"})

    third = await t.send("Which city did I ask about?")
    third.used_no_tools()
    t.check(t.reply, includes("London"))

    # Another session against the same agent shares nothing with the first.
    other = t.new_session()
    await other.send("Which city did I ask about?")
    t.check(other.reply, includes("not asked")).label("a new session has no history")

    t.succeeded()
    t.tool_order(["get_weather", "get_weather"])
