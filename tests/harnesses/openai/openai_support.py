"""A project whose variant runs the ``openai:`` harness against a scripted model server."""

from __future__ import annotations

from typing import Any

TOOLS = '''
import asyncio
from dataclasses import dataclass
from enum import Enum
from typing import Literal


class Unit(Enum):
    C = "celsius"
    F = "fahrenheit"


def get_weather(city: str, unit: Unit = Unit.C) -> dict:
    """Get the current weather for a city.

    Args:
        city: The city's name.
        unit: The temperature unit.
    """
    return {"city": city, "conditions": "Sunny", "unit": unit.value}


async def lookup(query: str, limit: int = 3) -> list:
    """Search the knowledge base."""
    await asyncio.sleep(0)
    return [f"{query} result {i}" for i in range(limit)]


def explode(reason: str) -> str:
    """A tool that always fails."""
    raise RuntimeError(f"the tool broke: {reason}")


TOOLS = [get_weather, lookup, explode]
'''


def config(url: str, options: dict[str, Any] | None = None, **variant: Any) -> str:
    """An evals.config.py with one ``openai:scripted-model`` variant pointed at ``url``."""
    opts = {"tools": "agents.model_tools:TOOLS", **(options or {})}
    extra = "".join(f", {k}={v!r}" for k, v in variant.items())
    return (
        "from anpord import define_eval_config, Variant\n"
        "config = define_eval_config(\n"
        "    harness='openai:scripted-model', timeout=20,\n"
        f"    variants=[Variant(harness='openai:scripted-model', env={{'OPENAI_BASE_URL': {url!r}}},\n"
        f"                      options={opts!r}{extra})],\n"
        ")\n"
    )
