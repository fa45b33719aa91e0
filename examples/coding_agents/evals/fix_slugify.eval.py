"""A repository task: make the failing tests pass without touching them."""

from anpord import command, define_eval, directory


def kept_the_tests(context):
    changed = context.files_changed()
    touched = [p for p in changed if p.startswith("tests/")]
    return not touched and "textkit/slug.py" in changed, f"changed: {changed}"


case = define_eval(
    prompt=(
        "The tests in tests/ fail. Fix textkit/slug.py so that `pytest -q` passes. "
        "Do not change the tests."
    ),
    source=directory("../repo"),
    validate=[command("pytest -q"), kept_the_tests],
    tags=["repo-task"],
)
