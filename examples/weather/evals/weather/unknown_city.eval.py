"""Single turn: a city the agent does not know. The tool fails; the agent says so politely."""

import re

from anpord import define_eval


@define_eval
async def test(t):
    turn = await t.send("What is the weather in Atlantis?")
    turn.expect_ok()
    t.called_tool("get_weather", input={"city": "Atlantis"}, status="failed")
    t.message_includes(re.compile(r"no forecast for Atlantis", re.IGNORECASE))
    assert turn.status == "completed"
