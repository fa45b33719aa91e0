"""Structured output: the turn's data travels in the stream's final line."""

from anpord import define_eval


@define_eval
async def test(t):
    turn = await t.send("forecast for Lima")
    assert turn.data == {"city": "Lima", "conditions": "Cloudy", "high_c": 19}
    t.output_equals({"city": "Lima", "conditions": "Cloudy", "high_c": 19})
