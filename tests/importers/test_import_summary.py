"""The closing line, singular and plural, and nothing after the first sentence when every
assertion converted."""

from __future__ import annotations

import pytest

from anpord.importers import Tally, summary_of

TAIL_ONE = (
    "could not be converted and needs a human: it is written as prose, and the suite fails until "
    "you write the check it describes."
)
TAIL_MANY = (
    "could not be converted and need a human: each is written as prose, and the suite fails until "
    "you write the check it describes."
)


@pytest.mark.parametrize(
    ("tally", "line"),
    [
        (Tally(1, 1, 0), "Read 1 case, converted 1 assertion."),
        (Tally(2, 5, 0), "Read 2 cases, converted 5 assertions."),
        (Tally(1, 1, 1), f"Read 1 case, converted 1 assertion. 1 assertion {TAIL_ONE}"),
        (Tally(3, 4, 3), f"Read 3 cases, converted 4 assertions. 3 assertions {TAIL_MANY}"),
        (Tally(1, 0, 1), f"Read 1 case, converted 0 assertions. 1 assertion {TAIL_ONE}"),
        (Tally(4, 9, 2), f"Read 4 cases, converted 9 assertions. 2 assertions {TAIL_MANY}"),
    ],
)
def test_summary_wording(tally: Tally, line: str) -> None:
    assert summary_of(tally) == line
    assert "\n" not in summary_of(tally)


def test_the_brief_example_word_for_word() -> None:
    assert summary_of(Tally(1, 1, 1)) == (
        "Read 1 case, converted 1 assertion. 1 assertion could not be converted and needs a human: "
        "it is written as prose, and the suite fails until you write the check it describes."
    )
