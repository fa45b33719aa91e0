"""A dataset from YAML: one case per row, ids from the city name (weather/cities/tokyo, ...)."""

from anpord import define_eval
from anpord.expect import includes, similarity
from anpord.loaders import load_yaml

ROWS = load_yaml("evals/data/cities.yaml")["cities"]


@define_eval(each=ROWS, id=lambda row: row["city"], tags=["dataset"])
async def test(t, row):
    await t.send(f"What is the forecast for {row['city']}?")
    t.succeeded()
    t.called_tool(
        "get_weather", output={"conditions": row["conditions"], "high_f": row["high_f"]}, count=1
    )
    t.check(t.reply, includes(row["conditions"]))
    # A soft check: below 0.8 the case is `scored` rather than failed (`--strict` makes that fail).
    t.check(t.reply, similarity(row["expected_reply"])).at_least(0.8)
