"""A tool call that fails is recorded as failed; the agent still answers."""

from anpord import define_eval


@define_eval
async def test(t):
    await t.send("weather in Atlantis")
    t.succeeded()
    t.called_tool("get_weather", input={"city": "Atlantis"}, status="failed")
    t.message_includes("no forecast for Atlantis")
