"""A small weather assistant written on anpord's Python agent API.

No model is involved: the agent follows fixed rules on the message, so every case is
deterministic. It still behaves like a tool-using agent:

- ``get_weather`` looks a city up in a table (a tool call, recorded as events);
- ``send_email`` and ``delete_file`` need the user's approval first (``turn.request_input``
  parks the session until the eval answers);
- ``long_operation`` is slow (about 30 s) and is meant to be cancelled mid-flight;
- ``write_file`` / ``read_file`` work in the trial's workspace when the case gives it one;
- the session is remembered: follow-up questions are answered from ``turn.messages``.

Harness spec: ``python:agents.weather:agent`` (see ``evals/evals.config.py``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from anpord import TurnContext

FORECASTS: dict[str, dict[str, Any]] = {
    "brooklyn": {"city": "Brooklyn", "conditions": "Sunny", "high_f": 72},
    "london": {"city": "London", "conditions": "Rainy", "high_f": 55},
    "tokyo": {"city": "Tokyo", "conditions": "Cloudy", "high_f": 64},
    "paris": {"city": "Paris", "conditions": "Windy", "high_f": 61},
    "reykjavik": {"city": "Reykjavik", "conditions": "Snowy", "high_f": 28},
}

Tool = Callable[[dict[str, Any]], Any]

GREETINGS = ("hello", "hi", "hey", "good morning", "good evening")


def _is_greeting(lowered: str) -> bool:
    return "weather" not in lowered and any(
        lowered == g or lowered.startswith((g + " ", g + "!", g + ",", g + ".")) for g in GREETINGS
    )


# -- tools ------------------------------------------------------------------------------------


def get_weather(args: dict[str, Any]) -> dict[str, Any]:
    key = str(args["city"]).strip().lower()
    if key not in FORECASTS:
        raise LookupError(f"no forecast for {args['city']}")
    return dict(FORECASTS[key])


def send_email(args: dict[str, Any]) -> dict[str, Any]:
    # A real agent would talk to a mail server here; the example only pretends.
    return {"status": "sent", "to": args["to"]}


async def long_operation(args: dict[str, Any]) -> dict[str, Any]:
    # Slow on purpose, in small steps, so a cancellation lands mid-flight.
    steps = int(args.get("steps", 300))
    for _ in range(steps):
        await asyncio.sleep(0.1)
    return {"status": "done", "steps": steps}


def _workspace_tools(turn: TurnContext) -> tuple[Tool, Tool, Tool]:
    """Tools bound to this turn's workspace (the folder a case's ``source=`` filled)."""
    root = turn.workspace

    def inside(name: str) -> Path:
        if root is None:
            raise RuntimeError("this conversation has no workspace")
        path = (root / name).resolve()
        if not path.is_relative_to(root.resolve()):
            raise PermissionError(f"{name} is outside the workspace")
        return path

    def read_file(args: dict[str, Any]) -> str:
        return inside(args["path"]).read_text(encoding="utf-8")

    def write_file(args: dict[str, Any]) -> dict[str, Any]:
        inside(args["path"]).write_text(args["text"], encoding="utf-8")
        return {"path": args["path"], "bytes": len(args["text"].encode("utf-8"))}

    def delete_file(args: dict[str, Any]) -> dict[str, Any]:
        inside(args["path"]).unlink()
        return {"deleted": args["path"]}

    return read_file, write_file, delete_file


# -- helpers ------------------------------------------------------------------------------------


def _find_city(text: str) -> str | None:
    lowered = text.lower()
    for key, row in FORECASTS.items():
        if re.search(rf"\b{key}\b", lowered):
            return str(row["city"])
    match = re.search(r"\b(?:in|for)\s+([A-Z][a-zA-Z]+)", text)
    return match.group(1) if match else None


def _last_city(messages: list[dict[str, Any]]) -> str | None:
    """The most recent city the user asked about, from the session's history."""
    for message in reversed(messages[:-1]):
        if message["role"] == "user":
            city = _find_city(str(message["content"]))
            if city:
                return city
    return None


def _describe(forecast: dict[str, Any]) -> str:
    return f"It is {forecast['conditions']} in {forecast['city']}, with a high of {forecast['high_f']}°F."


async def _forecast(turn: TurnContext, city: str) -> dict[str, Any] | None:
    try:
        forecast: dict[str, Any] = await turn.call_tool("get_weather", {"city": city}, get_weather)
    except LookupError:
        return None
    return forecast


# -- the agent ----------------------------------------------------------------------------------


async def agent(turn: TurnContext) -> str:
    text = turn.input if isinstance(turn.input, str) else str(turn.input)
    lowered = text.lower().strip()
    turn.usage(input_tokens=len(text.split()), output_tokens=12)

    if _is_greeting(lowered):
        return "Hello! Ask me about the weather in a city."

    if "long operation" in lowered:
        turn.emit("progress", stage="starting long_operation")
        result = await turn.call_tool("long_operation", {"steps": 300}, long_operation)
        return f"The long operation finished: {result['status']}."

    if "what city" in lowered or "which city" in lowered:
        city = _last_city(turn.messages)
        return f"You asked about {city}." if city else "You have not asked about a city yet."

    email = re.search(r"[\w.+-]+@[\w-]+\.[\w.]+", text)
    if email and ("email" in lowered or "send" in lowered):
        return await _email(turn, text, email.group(0))

    if lowered.startswith("delete"):
        return await _delete(turn, text)

    if "report" in lowered and turn.workspace is not None:
        return await _report(turn, text)

    city = _find_city(text) or (
        _last_city(turn.messages) if "tomorrow" in lowered or "there" in lowered else None
    )
    if "weather" in lowered or "forecast" in lowered or city:
        if city is None:
            return "Which city would you like the weather for?"
        forecast = await _forecast(turn, city)
        if forecast is None:
            return f"Sorry, I have no forecast for {city}."
        return _describe(forecast)

    return "I can tell you the weather, email a forecast, or write a weather report."


async def _email(turn: TurnContext, text: str, to: str) -> str:
    city = _find_city(text) or _last_city(turn.messages) or "Brooklyn"
    forecast = await _forecast(turn, city)
    body = _describe(forecast) if forecast else f"No forecast for {city}."
    draft = {"to": to, "subject": f"Weather in {city}", "body": body}
    answer = await turn.request_input(
        f"Send an email to {to} about the weather in {city}?",
        options=[{"id": "approve", "label": "Send it"}, {"id": "deny", "label": "Don't send"}],
        tool_name="send_email",
        input=draft,
    )
    if answer != "approve":
        return f"OK, I did not send the email to {to}."
    await turn.call_tool("send_email", draft, send_email)
    return f"I emailed the {city} forecast to {to}."


async def _delete(turn: TurnContext, text: str) -> str:
    names = re.findall(r"[\w./-]+\.\w+", text)
    if not names:
        return "Which file should I delete?"
    _, _, delete_file = _workspace_tools(turn)

    async def one(name: str) -> str:
        answer = await turn.request_input(
            f"Delete {name}?",
            options=["approve", "deny"],
            tool_name="delete_file",
            input={"path": name},
        )
        if answer != "approve":
            return f"kept {name}"
        await turn.call_tool("delete_file", {"path": name}, delete_file)
        return f"deleted {name}"

    # Several approvals at once: the session parks with one pending request per file.
    outcomes = await asyncio.gather(*(one(name) for name in names))
    return "Done: " + ", ".join(outcomes) + "."


async def _report(turn: TurnContext, text: str) -> str:
    read_file, write_file, _ = _workspace_tools(turn)
    listing = await turn.call_tool("read_file", {"path": "cities.txt"}, read_file)
    lines = []
    for city in (line.strip() for line in listing.splitlines()):
        if not city:
            continue
        forecast = await _forecast(turn, city)
        lines.append(
            f"- {city}: {forecast['conditions']}, {forecast['high_f']}°F"
            if forecast
            else f"- {city}: unknown"
        )
    report = "# Weather report\n\n" + "\n".join(lines) + "\n"
    await turn.call_tool("write_file", {"path": "report.md", "text": report}, write_file)
    return f"I wrote report.md with {len(lines)} cities."
