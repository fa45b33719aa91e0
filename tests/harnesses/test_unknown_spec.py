"""A mistyped harness spec names the closest one it may have meant."""

from __future__ import annotations

import pytest

from anpord.harnesses import HarnessSpecError, resolve_harness


@pytest.mark.parametrize(("spec", "hint"), [("claud", "'claude'"), ("pyhton:a:b", "'python'"), ("codx", "'codex'")])
def test_a_mistyped_spec_suggests_the_closest(spec: str, hint: str) -> None:
    with pytest.raises(HarnessSpecError, match=f"did you mean {hint}"):
        resolve_harness(spec)


def test_a_spec_far_from_any_gets_no_guess() -> None:
    with pytest.raises(HarnessSpecError) as err:
        resolve_harness("zzzzzz")
    assert "did you mean" not in str(err.value) and "expected one of" in str(err.value)
