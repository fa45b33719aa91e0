"""A slow turn watched live and cancelled mid-flight."""

from anpord import define_eval


@define_eval
async def test(t):
    live = await t.start("count to 100 slowly")
    await live.wait_for_event("progress", data={"n": 2})
    assert await live.cancel()
    turn = await live.result()
    assert turn.status == "cancelled", turn.status
    # The server stopped the work itself and said so in its turn.end line.
    assert turn.error.startswith("cancelled after"), turn.error
    steps = [e.data["n"] for e in turn.events if e.type == "progress"]
    assert 2 <= len(steps) < 100, steps
    t.event("turn.cancelled")
    t.not_event("turn.completed")
