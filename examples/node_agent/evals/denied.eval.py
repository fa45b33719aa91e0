"""Denied: nothing is deleted, and the session takes new messages again."""

from anpord import define_eval


@define_eval
async def test(t):
    await t.send("delete report.pdf")
    t.parked()
    await t.respond_all("deny")
    t.not_called_tool("delete_file")
    t.message_includes("Kept report.pdf.")
    await t.send("weather in Lima")
    t.message_includes("Cloudy")
