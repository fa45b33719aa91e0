"""match_value: the matching rules every assertion shares."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from anpord.expect import includes, match_detail, match_value


def test_dicts_match_partially_and_deeply() -> None:
    actual = {"city": "Brooklyn", "days": [{"high": 71, "sky": "sunny"}], "extra": True}
    assert match_value({"city": "Brooklyn"}, actual) == (True, "")
    assert match_value({"days": [{"high": 71}]}, actual) == (True, "")
    ok, why = match_value({"days": [{"high": 60}]}, actual)
    assert not ok
    assert why == "at $.days[0].high: expected 60, saw 71"


def test_missing_key_names_the_keys_seen() -> None:
    ok, why = match_value({"town": "x"}, {"city": "Brooklyn", "zip": 1})
    assert not ok
    assert "missing key 'town'" in why and "city, zip" in why


def test_dict_against_non_dict() -> None:
    ok, why = match_value({"a": 1}, [1])
    assert not ok and "expected an object, saw [1]" in why


def test_exact_mode_forbids_extra_keys() -> None:
    assert match_value({"a": 1}, {"a": 1}, exact=True) == (True, "")
    ok, why = match_value({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, exact=True)
    assert not ok and "at $.a: unexpected key(s) 'c'" in why


def test_lists_match_element_by_element() -> None:
    assert match_value([1, {"a": 2}], [1, {"a": 2, "b": 3}])[0]
    ok, why = match_value([1, 2], [1, 2, 3])
    assert not ok and "expected 2 items, saw 3" in why
    ok, why = match_value([1, 2], [1, 5])
    assert not ok and why == "at $[1]: expected 2, saw 5"
    ok, why = match_value([1], "1")
    assert not ok and "expected a list" in why
    # tuples are sequences too
    assert match_value((1, 2), [1, 2])[0]


def test_regex_tests_strings() -> None:
    assert match_value(re.compile(r"sun+y", re.IGNORECASE), "It is SUNNY")[0]
    ok, why = match_value(re.compile(r"^rain"), "sunny")
    assert not ok and why == 'expected a match for /^rain/, saw "sunny"'


def test_regex_tests_json_text_of_non_strings() -> None:
    assert match_value(re.compile(r'"city": "NYC"'), {"city": "NYC"})[0]
    assert match_value(re.compile(r"^\[1, 2\]$"), [1, 2])[0]
    assert match_value(re.compile(r"^42$"), 42)[0]
    assert not match_value(re.compile(r"Boston"), {"city": "NYC"})[0]


def test_callable_is_a_predicate() -> None:
    assert match_value(lambda n: n > 3, 5) == (True, "")
    ok, why = match_value({"n": lambda n: n > 3}, {"n": 1})
    assert not ok and "at $.n: predicate <lambda> rejected 1" in why


def test_raising_predicate_is_no_match_with_the_error() -> None:
    def boom(value: object) -> bool:
        raise KeyError("nope")

    ok, why = match_value({"a": boom}, {"a": 1})
    assert not ok
    assert "predicate boom raised KeyError" in why and "nope" in why
    m = match_detail({"a": boom}, {"a": 1})
    assert m.error and "KeyError" in m.error


def test_predicate_returning_a_tuple_is_not_truthy_by_accident() -> None:
    assert not match_value(lambda v: (False, "too small"), 1)[0]
    _ok, why = match_value(lambda v: (False, "too small"), 1)
    assert "too small" in why
    assert match_value(lambda v: (True, "fine"), 1)[0]


def test_class_tests_isinstance() -> None:
    assert match_value({"n": int, "s": str}, {"n": 3, "s": "x"})[0]
    ok, why = match_value({"n": int}, {"n": "3"})
    assert not ok and 'expected an instance of int, saw "3"' in why


def test_matcher_instance_delegates() -> None:
    assert match_value({"text": includes("Sun")}, {"text": "Sunny"})[0]
    ok, why = match_value({"text": includes("Rain")}, {"text": "Sunny"})
    assert not ok and why.startswith("at $.text: ") and '"Sunny"' in why


def test_plain_values_compare_with_equality() -> None:
    assert match_value(3, 3.0)[0]
    assert match_value(None, None)[0]
    ok, why = match_value("5", 5)
    assert not ok and why == 'expected "5" (str), saw 5 (int)'
    # JSON semantics: true is not 1
    assert not match_value(True, 1)[0]
    assert not match_value(1, True)[0]
    ok, why = match_value("hello world", "hello there")
    assert "first difference" not in why
    ok, why = match_value("a" * 50 + "b", "a" * 50 + "c")
    assert "first difference at index 50" in why


def test_long_values_are_truncated_in_messages() -> None:
    ok, why = match_value("short", "x" * 1000)
    assert not ok
    assert "… (+" in why
    assert len(why) < 450


def test_pydantic_and_dataclass_values_match_by_fields() -> None:
    @dataclass
    class Forecast:
        city: str
        high: int

    assert match_value({"city": "NYC"}, Forecast("NYC", 70))[0]
    pydantic = pytest.importorskip("pydantic")

    class Model(pydantic.BaseModel):
        city: str

    assert match_value({"city": "NYC"}, Model(city="NYC"))[0]
    assert not match_value({"city": "LA"}, Model(city="NYC"))[0]


def test_comparison_that_raises_is_an_error() -> None:
    class Weird:
        def __eq__(self, other: object) -> bool:
            raise ValueError("ambiguous")

    m = match_detail(Weird(), 1)
    assert not m.ok and m.error and "ambiguous" in m.error
