"""The public matchers: includes, equals, matches, satisfies, similarity."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from anpord.expect import Matcher, MatchResult, equals, includes, matches, satisfies, similarity


def test_includes_substring() -> None:
    res = includes("Sunny").evaluate("It is Sunny in Brooklyn")
    assert res.ok and res.score == 1.0
    res = includes("Rain").evaluate("It is Sunny")
    assert not res.ok and res.score == 0.0
    assert res.message == 'expected text including "Rain", saw "It is Sunny"'


def test_includes_regex_search() -> None:
    assert includes(re.compile(r"\bsun\w*", re.IGNORECASE)).evaluate("SUNNY day").ok
    res = includes(re.compile(r"^rain")).evaluate("sunny")
    assert not res.ok and "a match for /^rain/" in res.message


def test_includes_on_non_strings_uses_json_text() -> None:
    assert includes('"city": "NYC"').evaluate({"city": "NYC"}).ok
    assert includes("Boston").evaluate(["NYC", "Boston"]).ok
    assert not includes("LA").evaluate({"city": "NYC"}).ok


def test_includes_none_says_no_value() -> None:
    res = includes("x").evaluate(None)
    assert not res.ok and "saw no value" in res.message


def test_includes_ignore_case() -> None:
    assert includes("sunny", ignore_case=True).evaluate("SUNNY").ok
    assert includes(re.compile("sunny"), ignore_case=True).evaluate("SUNNY").ok
    assert not includes("sunny").evaluate("SUNNY").ok


def test_includes_rejects_other_needles() -> None:
    with pytest.raises(TypeError):
        includes(3)  # type: ignore[arg-type]


def test_equals_is_exact_for_dicts() -> None:
    assert equals({"a": 1}).evaluate({"a": 1}).ok
    res = equals({"a": 1}).evaluate({"a": 1, "b": 2})
    assert not res.ok and "unexpected key(s) 'b'" in res.message
    assert equals("SELECT 1").evaluate("SELECT 1").ok
    res = equals("SELECT 1").evaluate("SELECT 2")
    assert not res.ok and 'saw "SELECT 2"' in res.message


def test_equals_allows_nested_matchers() -> None:
    assert (
        equals({"id": re.compile(r"^c\d+$"), "n": lambda n: n > 0})
        .evaluate({"id": "c12", "n": 3})
        .ok
    )


def test_matches_string_is_a_regex() -> None:
    assert matches(r"\d{3}").evaluate("call 555 now").ok
    res = matches(r"^\d+$").evaluate("abc")
    assert not res.ok and "/^\\d+$/" in res.message


def test_matches_structure_is_partial() -> None:
    assert matches({"a": {"b": 1}}).evaluate({"a": {"b": 1, "c": 2}, "d": 3}).ok
    res = matches({"a": {"b": 2}}).evaluate({"a": {"b": 1}})
    assert not res.ok and res.message == "at $.a.b: expected 2, saw 1"


def test_satisfies() -> None:
    m = satisfies(lambda s: len(s) < 10, "short")
    assert m.evaluate("hi").ok
    res = m.evaluate("a much longer text")
    assert not res.ok and res.message == 'short was not satisfied by "a much longer text"'
    assert m.description == "satisfies(short)"


def test_satisfies_label_defaults_to_function_name() -> None:
    def is_even(n: int) -> bool:
        return n % 2 == 0

    assert satisfies(is_even).description == "satisfies(is_even)"


def test_satisfies_raising_is_an_error() -> None:
    res = satisfies(lambda s: s.missing, "attr").evaluate("x")
    assert not res.ok and res.error
    assert "attr raised AttributeError" in res.message


def test_satisfies_tuple_verdict() -> None:
    res = satisfies(lambda v: (False, "wrong unit"), "unit").evaluate(3)
    assert not res.ok and "wrong unit" in res.message


def test_similarity_known_pairs() -> None:
    assert similarity("kitten").evaluate("sitting").score == pytest.approx(1 - 3 / 7)
    assert similarity("flaw").evaluate("lawn").score == pytest.approx(0.5)
    assert similarity("same").evaluate("same").score == 1.0
    assert similarity("").evaluate("").score == 1.0
    assert similarity("abc").evaluate("").score == 0.0
    assert similarity("abc").evaluate(None).score == 0.0


def test_similarity_is_soft_and_threshold() -> None:
    m = similarity("kitten")
    assert m.default_kind == "soft" and m.default_threshold is None
    assert m.evaluate("sitting").ok  # no threshold: never misses
    m = similarity("kitten", threshold=0.8)
    res = m.evaluate("sitting")
    assert not res.ok
    assert "similarity 0.571 (threshold 0.8)" in res.message and '"sitting"' in res.message
    assert similarity("kitten", threshold=0.5).evaluate("sitting").ok


def test_similarity_threshold_range() -> None:
    with pytest.raises(ValueError):
        similarity("x", threshold=1.5)


def test_similarity_on_non_strings_uses_json_text() -> None:
    assert similarity({"a": 1}).evaluate({"a": 1}).score == 1.0
    assert 0 < similarity({"a": 1}).evaluate({"a": 2}).score < 1


def test_matchers_satisfy_the_protocol() -> None:
    for m in (includes("x"), equals(1), matches("x"), satisfies(bool, "b"), similarity("x")):
        assert isinstance(m, Matcher)
        assert isinstance(m.evaluate("x"), MatchResult)
        assert m.name and m.description
    assert includes("x").default_kind == "gate"
    assert equals(1).default_threshold == 1.0


def test_results_carry_expected_description_and_actual() -> None:
    res = includes("Sun").evaluate("Rain")
    assert res.expected == 'includes("Sun")'
    assert res.actual == "Rain"


def test_import_is_light() -> None:
    code = (
        "import sys, anpord.expect;"
        "bad = [m for m in ('pydantic', 'jsonschema', 'yaml') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
