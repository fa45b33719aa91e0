"""Declarative cases: a prompt, a fresh workspace from a source, then checks in the sandbox."""

from anpord import command, define_eval, define_suite, files


def noted_milk(context) -> tuple[bool, str]:
    changed = context.files_changed()
    return "NOTES.md" in changed, f"files changed: {changed}"


suite = define_suite(
    source=files({"NOTES.md": "# Notes\n", "todo.txt": "call Ann\n"}),
    cases=[
        define_eval(
            id="note",
            prompt="note buy milk",
            validate=[noted_milk, command("grep -q 'buy milk' NOTES.md && test -f todo.txt")],
        ),
        define_eval(
            id="list",
            prompt="list",
            validate=lambda context: (len(context.commands()) == 1, "ran ls once"),
        ),
    ],
)
