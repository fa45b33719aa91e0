"""A case that FAILS ON PURPOSE, to show what a failure report looks like.

It is tagged `demo-failure` and left out of the normal run:

    anpord eval --exclude-tag demo-failure    # the real cases: exits 0
    anpord eval --tag demo-failure            # just this one: exits 1
"""

from anpord import define_eval
from anpord.expect import includes


@define_eval(tags=["demo-failure"])
async def test(t):
    await t.send("What is the weather in Tokyo?")
    t.succeeded()  # passes: the turn completed
    # Wrong on purpose: Tokyo is Cloudy in the agent's table, and the city sent was Tokyo.
    t.called_tool("get_weather", input={"city": "Osaka"})
    t.check(t.reply, includes("Sunny")).label("the reply promises sunshine")
