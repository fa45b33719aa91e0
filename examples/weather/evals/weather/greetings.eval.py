"""A dataset from JSON: every greeting gets a friendly reply and no tool call."""

from anpord import define_eval
from anpord.loaders import load_json

GREETINGS = load_json("evals/data/greetings.json")


@define_eval(each=GREETINGS, id=lambda text: text)
async def test(t, text):
    await t.send(text)
    t.succeeded()
    t.used_no_tools()
    t.message_includes("Hello!")
