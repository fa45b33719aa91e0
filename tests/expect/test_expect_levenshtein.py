"""The bit-parallel Levenshtein distance against the textbook table."""

from __future__ import annotations

import random
import time
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from anpord.expect import levenshtein, similarity_ratio


def table_distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def test_known_distances() -> None:
    assert levenshtein("kitten", "sitting") == 3
    assert levenshtein("flaw", "lawn") == 2
    assert levenshtein("", "abc") == 3
    assert levenshtein("abc", "") == 3
    assert levenshtein("abc", "abc") == 0
    assert levenshtein("gumbo", "gambol") == 2
    assert levenshtein("héllo wörld", "hello world") == 2


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="abcd", max_size=40), st.text(alphabet="abcd", max_size=40))
def test_agrees_with_the_table(a: str, b: str) -> None:
    assert levenshtein(a, b) == table_distance(a, b)
    assert levenshtein(b, a) == levenshtein(a, b)


def test_agrees_on_long_random_texts() -> None:
    rng = random.Random(7)
    for _ in range(5):
        a = "".join(rng.choice("abcdefgh ") for _ in range(rng.randint(60, 200)))
        b = "".join(rng.choice("abcdefgh ") for _ in range(rng.randint(60, 200)))
        assert levenshtein(a, b) == table_distance(a, b)


def test_ratio_bounds() -> None:
    assert similarity_ratio("", "") == 1.0
    assert similarity_ratio("abc", "xyz") == 0.0
    assert similarity_ratio("kitten", "sitting") == 1 - 3 / 7


def test_long_texts_are_fast() -> None:
    rng = random.Random(1)
    a = "".join(rng.choice("abcdefghij ") for _ in range(10_000))
    b = "".join(rng.choice("abcdefghij ") for _ in range(10_000))

    def seconds(work: Any) -> float:
        start = time.perf_counter()
        work()
        return time.perf_counter() - start

    # Against the quadratic table on the same machine at the same moment, so a loaded machine
    # slows both: the table on 800 characters (640 thousand cells) takes several times what
    # levenshtein takes on 10 000 (a table there would have a hundred million).
    fast = min(seconds(lambda: levenshtein(a, b)) for _ in range(3))
    table = seconds(lambda: table_distance(a[:800], b[:800]))
    assert fast < table, (fast, table)
