"""The server keeps each conversation's history; a new session starts empty."""

from anpord import define_eval


@define_eval
async def test(t):
    await t.send("weather in Lisbon")
    await t.send("weather in Oslo")
    await t.send("what did I ask?")
    t.message_includes("You asked: weather in Lisbon; weather in Oslo")

    other = t.new_session()
    await other.send("what did I ask?")
    other.message_includes("You have not asked anything yet.")
    assert other.session_id != t.session_id
