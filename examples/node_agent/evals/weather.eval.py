"""A tool call and its answer; an unknown city is a failed tool call the agent recovers from."""

from anpord import define_eval
from anpord.expect import includes

CASES = [
    {"id": "lisbon", "city": "Lisbon", "answer": "It is Sunny in Lisbon, 24°C."},
    {"id": "oslo", "city": "Oslo", "answer": "It is Snowy in Oslo, -3°C."},
]


@define_eval(each=CASES, id=lambda row: row["id"])
async def test(t, row):
    turn = await t.send(f"weather in {row['city']}")
    turn.expect_ok()
    t.called_tool("get_weather", input={"city": row["city"]}, status="completed", count=1)
    t.event("usage", data={"output_tokens": 8})
    t.check(t.reply, includes(row["answer"]))
