"""Declarative: a prompt, a workspace filled by files({...}), and validate(context) to decide."""

from anpord import define_eval, files


async def validate(context):
    if not context.exists("report.md"):
        return False, "report.md was not written"
    report = context.read_text("report.md")
    for line in ("- Brooklyn: Sunny, 72°F", "- Tokyo: Cloudy, 64°F", "- Atlantis: unknown"):
        if line not in report:
            return False, f"report.md lacks {line!r}; it reads: {report!r}"
    answer = await context.answer()
    if "3 cities" not in answer:
        return False, f"the answer does not say how many cities were reported: {answer!r}"
    if [c.name for c in context.tool_calls("write_file")] != ["write_file"]:
        return False, "expected exactly one write_file call"
    return True


case = define_eval(
    prompt="Write a weather report for the cities listed in cities.txt.",
    source=files({"cities.txt": "Brooklyn\nTokyo\nAtlantis\n"}),
    validate=validate,
    tags=["declarative"],
)
