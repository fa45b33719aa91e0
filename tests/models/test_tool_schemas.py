"""Tool schemas from Python functions (type hints and docstrings) or pydantic models, and the
model's arguments checked against them and turned back into the annotated types."""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

import pytest

from anpord.models import Tool, ToolArgumentsError, ToolSet, tool

try:
    import pydantic
except ImportError:  # pragma: no cover - pydantic is a test dependency
    pydantic = None
else:

    class Point(pydantic.BaseModel):
        x: int
        y: int = pydantic.Field(default=0, ge=0, description="height")

    class Shape(pydantic.BaseModel):
        name: str
        points: list[Point]

    def draw(shape: Shape) -> str:
        """Draw a shape."""
        return f"{shape.name}:{len(shape.points)}"

    def measure(shape: Shape, scale: float = 1.0) -> float:
        return len(shape.points) * scale


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(TypedDict):
    street: str
    number: int


class Opaque:
    """A type with no JSON form."""


@dataclass
class Window:
    start: str
    days: int = 1


def plan(
    city: str,
    count: int,
    ratio: float,
    urgent: bool,
    tags: list[str],
    extra: dict[str, int],
    note: str | None = None,
    mode: Literal["fast", "slow"] = "fast",
    color: Color = Color.RED,
    address: Address | None = None,
    window: Window | None = None,
    pair: tuple[int, str] | None = None,
    size: Annotated[int, "how many, at most 10"] = 3,
) -> dict[str, Any]:
    """Plan a trip.

    Longer text that is not the description.

    Args:
        city: Where to go.
        count: How many people
            travel together.
    """
    return {"city": city, "color": color, "window": window, "pair": pair, "ratio": ratio}


def test_a_function_becomes_a_tool_schema() -> None:
    t = tool(plan)
    assert t.name == "plan" and t.description == "Plan a trip."
    params = t.parameters
    props = params["properties"]
    assert params["type"] == "object" and params["additionalProperties"] is False
    assert params["required"] == ["city", "count", "ratio", "urgent", "tags", "extra"]
    assert props["city"] == {"type": "string", "description": "Where to go."}
    assert props["count"] == {"type": "integer", "description": "How many people travel together."}
    assert props["ratio"] == {"type": "number"} and props["urgent"] == {"type": "boolean"}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["extra"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert props["mode"] == {"enum": ["fast", "slow"], "type": "string", "default": "fast"}
    assert props["color"] == {"enum": ["red", "blue"], "type": "string"}
    assert props["address"]["anyOf"][0] == {
        "type": "object",
        "properties": {"street": {"type": "string"}, "number": {"type": "integer"}},
        "additionalProperties": False,
        "required": ["street", "number"],
    }
    assert props["window"]["anyOf"][0]["required"] == ["start"]
    assert props["pair"]["anyOf"][0]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert props["size"] == {"type": "integer", "description": "how many, at most 10", "default": 3}
    assert t.spec() == {
        "type": "function",
        "function": {"name": "plan", "description": "Plan a trip.", "parameters": params},
    }


def test_arguments_are_checked_and_turned_into_their_types() -> None:
    t = tool(plan)
    args = t.parse(
        '{"city": "Oslo", "count": 2, "ratio": 1, "urgent": false, "tags": [], "extra": {},'
        ' "color": "blue", "window": {"start": "mon"}, "pair": [1, "a"]}'
    )
    out = asyncio.run(t.call(args))
    assert out == {
        "city": "Oslo",
        "color": Color.BLUE,
        "window": Window("mon", 1),
        "pair": (1, "a"),
        "ratio": 1.0,
    }
    assert isinstance(out["ratio"], float)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ('{"city": "Oslo"', "arguments are not valid JSON"),
        ("[1, 2]", "arguments must be a JSON object, got list"),
        ('{"count": 1}', "missing required 'city'"),
        (
            '{"city": 3, "count": 1, "ratio": 1, "urgent": true, "tags": [], "extra": {}}',
            "city: expected string, got 3",
        ),
        (
            '{"city": "a", "count": true, "ratio": 1, "urgent": true, "tags": [], "extra": {}}',
            "count: expected integer, got True",
        ),
        (
            '{"city": "a", "count": 1, "ratio": 1, "urgent": true, "tags": [1], "extra": {}}',
            "tags[0]: expected string, got 1",
        ),
        (
            '{"city": "a", "count": 1, "ratio": 1, "urgent": true, "tags": [], "extra": {}, "mode": "warp"}',
            "mode: 'warp' is not one of 'fast', 'slow'",
        ),
        (
            '{"city": "a", "count": 1, "ratio": 1, "urgent": true, "tags": [], "extra": {}, "town": "x"}',
            "unexpected 'town'",
        ),
        (
            '{"city": "a", "count": 1, "ratio": 1, "urgent": true, "tags": [], "extra": {}, "address": {"street": "x"}}',
            "address: {'street': 'x'} matches none of the allowed forms",
        ),
    ],
)
def test_arguments_that_do_not_fit_are_refused_with_the_reason(
    arguments: str, message: str
) -> None:
    with pytest.raises(ToolArgumentsError) as info:
        tool(plan).parse(arguments)
    assert message in str(info.value)


def test_a_pydantic_model_gives_the_schema_and_the_validated_value() -> None:
    assert pydantic is not None, "pydantic is a test dependency"
    t = tool(draw, params=Shape)
    assert t.parameters["$defs"]["Point"]["properties"]["y"]["minimum"] == 0
    assert t.parameters["properties"]["points"]["items"] == {"$ref": "#/$defs/Point"}
    args = t.parse('{"name": "tri", "points": [{"x": 1, "y": 2}]}')
    assert asyncio.run(t.call(args)) == "tri:1"
    with pytest.raises(ToolArgumentsError, match=r"points\[0\]\.y: -1 breaks minimum 0"):
        t.parse('{"name": "tri", "points": [{"x": 1, "y": -1}]}')

    nested = tool(measure)  # a pydantic-typed parameter of a plain function
    assert nested.parameters["$defs"]["Point"]["required"] == ["x"]
    assert (
        asyncio.run(
            nested.call(nested.parse('{"shape": {"name": "a", "points": [{"x": 0}]}, "scale": 2}'))
        )
        == 2.0
    )


def test_docstring_styles_give_parameter_descriptions() -> None:
    def rest(city: str, days: int) -> None:
        """Forecast.

        :param city: the city
        :param int days: how many
            days ahead
        """

    def numpy(city: str) -> None:
        """Forecast.

        Parameters
        ----------
        city : str
            The city.
        """

    assert tool(rest).parameters["properties"]["days"]["description"] == "how many days ahead"
    assert tool(numpy).parameters["properties"]["city"]["description"] == "The city."


def test_what_cannot_be_a_tool_says_why() -> None:
    def bad(thing: Opaque) -> None: ...

    with pytest.raises(
        TypeError, match="tool bad, parameter thing: cannot describe Opaque as JSON"
    ):
        tool(bad)
    with pytest.raises(ValueError, match="two tools are named 'plan'"):
        ToolSet([plan, plan])
    with pytest.raises(ValueError, match="tool name 'a b' must be"):
        tool(plan, name="a b")


def test_async_and_sync_tools_run_and_a_decorated_tool_keeps_its_name() -> None:
    @tool(name="add_numbers", description="Adds.")
    async def add(a: int, b: int) -> int:
        return a + b

    assert isinstance(add, Tool) and add.name == "add_numbers" and add.description == "Adds."
    assert asyncio.run(add.call(add.parse('{"a": 2, "b": 3}'))) == 5
