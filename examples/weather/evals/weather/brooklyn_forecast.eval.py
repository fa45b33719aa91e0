"""Single turn: ask for a forecast, check the tool call and the reply."""

from anpord import define_eval
from anpord.expect import includes


@define_eval(tags=["smoke"])
async def test(t):
    await t.send("What is the weather in Brooklyn?")
    t.succeeded()
    t.called_tool("get_weather", input={"city": "Brooklyn"}, output={"conditions": "Sunny"})
    t.check(t.reply, includes("Sunny"))
