"""Tools the model may call: Python functions described by their type hints and docstring.

``tool(fn)`` reads ``fn``'s signature (see ``_schema`` for the types it understands) and its
docstring (first paragraph = description; Google ``Args:``, reST ``:param x:`` or numpy
``Parameters`` sections = parameter descriptions). ``tool(fn, params=Model)`` takes the schema
from a pydantic model instead and calls ``fn`` with the validated model instance."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import re
import sys
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._schema import SchemaError, coerce, is_pydantic_model, schema_for
from ._validate import schema_errors

__all__ = ["Tool", "ToolArgumentsError", "ToolSet", "as_tool", "load_tools", "tool"]


class ToolArgumentsError(ValueError):
    """The model's arguments are not JSON or do not fit the tool's schema."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: Mapping[str, Any]
    fn: Callable[..., Any] = field(repr=False)
    # Turns validated JSON arguments into the call's keyword arguments (or one positional model).
    binder: Callable[[dict[str, Any]], tuple[tuple[Any, ...], dict[str, Any]]] | None = field(
        repr=False, default=None
    )

    def spec(self) -> dict[str, Any]:
        """The tool as a chat-completions ``tools`` entry."""
        fn: dict[str, Any] = {"name": self.name, "parameters": dict(self.parameters)}
        if self.description:
            fn["description"] = self.description
        return {"type": "function", "function": fn}

    def parse(self, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
        """The model's argument text → a dict that fits the schema; raises ToolArgumentsError."""
        if isinstance(arguments, str):
            text = arguments.strip() or "{}"
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ToolArgumentsError(
                    f"arguments are not valid JSON ({exc.msg} at {exc.pos})"
                ) from None
        else:
            value = dict(arguments)
        if not isinstance(value, dict):
            raise ToolArgumentsError(f"arguments must be a JSON object, got {type(value).__name__}")
        errors = schema_errors(value, self.parameters)
        if errors:
            raise ToolArgumentsError("arguments do not match the schema: " + "; ".join(errors))
        return value

    async def call(self, arguments: dict[str, Any]) -> Any:
        """Run the tool on parsed arguments: a sync function in a thread, an async one awaited."""
        try:
            args, kwargs = self.binder(arguments) if self.binder is not None else ((), arguments)
        except (TypeError, ValueError) as exc:
            raise ToolArgumentsError(f"arguments do not fit {self.name}: {exc}") from None
        if inspect.iscoroutinefunction(self.fn) or inspect.iscoroutinefunction(
            type(self.fn).__call__
        ):
            return await self.fn(*args, **kwargs)
        result = await asyncio.to_thread(self.fn, *args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result


# -- docstrings ---------------------------------------------------------------------------------

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?|See Also)\s*:?\s*$"
)
_REST_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _doc_parts(doc: str | None) -> tuple[str, dict[str, str]]:
    """(description, {parameter: description}) from a docstring."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    desc: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line) or line.startswith(":"):
            break
        desc.append(line.strip())
    params: dict[str, str] = {}
    current: str | None = None
    section: str | None = None
    numpy = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        header = _SECTION.match(line)
        if header:
            section = header.group(1)
            numpy = i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}
            current = None
            continue
        rest = _REST_PARAM.match(stripped)
        if rest:
            current = rest.group(1)
            params[current] = rest.group(2).strip()
            continue
        if not stripped or set(stripped) == {"-"}:
            continue
        indent = len(line) - len(line.lstrip())
        in_params = section in ("Args", "Arguments", "Parameters", "Params")
        entry = _ENTRY.match(stripped) if in_params else None
        if entry and indent <= (0 if numpy else 4):
            current = entry.group(1)
            params[current] = "" if numpy else entry.group(2).strip()
        elif current is not None and (in_params or line.startswith(" ")):
            params[current] = f"{params[current]} {stripped}".strip()
    return " ".join(desc), params


# -- building tools -----------------------------------------------------------------------------


def _from_signature(fn: Callable[..., Any], name: str, description: str | None) -> Tool:
    doc_desc, doc_params = _doc_parts(inspect.getdoc(fn))
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        raise SchemaError(f"tool {name}: cannot read its signature") from None
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # noqa: BLE001 - a forward reference that does not resolve
        raise SchemaError(f"tool {name}: cannot resolve its type hints: {exc}") from None
    props: dict[str, Any] = {}
    required: list[str] = []
    defs: dict[str, Any] = {}
    types: dict[str, Any] = {}
    for pname, param in sig.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.kind is param.POSITIONAL_ONLY:
            raise SchemaError(
                f"tool {name}: parameter {pname} is positional-only; tools take keyword arguments"
            )
        tp = hints.get(pname, Any)
        try:
            schema, sub_defs = schema_for(tp)
        except SchemaError as exc:
            raise SchemaError(f"tool {name}, parameter {pname}: {exc}") from None
        defs.update(sub_defs)
        if doc_params.get(pname) and "description" not in schema:
            schema["description"] = doc_params[pname]
        if param.default is not param.empty and _json_default(param.default):
            schema.setdefault("default", param.default)
        props[pname] = schema
        types[pname] = tp
        if param.default is param.empty:
            required.append(pname)
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": props,
        "additionalProperties": False,
    }
    if required:
        parameters["required"] = required
    if defs:
        parameters["$defs"] = defs

    def binder(arguments: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (), {k: coerce(types.get(k, Any), v) for k, v in arguments.items()}

    return Tool(name, description if description is not None else doc_desc, parameters, fn, binder)


def _json_default(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return value is not None


def _from_model(fn: Callable[..., Any], model: Any, name: str, description: str | None) -> Tool:
    schema, defs = schema_for(model)
    parameters = dict(schema)
    if defs:
        parameters["$defs"] = defs
    parameters.setdefault("type", "object")
    doc_desc, _ = _doc_parts(inspect.getdoc(fn))

    def binder(arguments: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        try:
            return (model.model_validate(arguments),), {}
        except Exception as exc:  # pydantic's ValidationError, without importing pydantic
            raise ValueError(" ".join(str(exc).split())) from None

    return Tool(name, description if description is not None else doc_desc, parameters, fn, binder)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    params: Any = None,
) -> Any:
    """Describe ``fn`` as a tool. Usable as ``tool(fn)``, ``@tool`` or ``@tool(name=...)``.

    ``params``: a pydantic model class giving the schema; ``fn`` then receives the validated
    model instance. Raises TypeError when a parameter's type cannot be described as JSON."""

    def build(f: Callable[..., Any]) -> Tool:
        if not callable(f):
            raise TypeError(f"a tool must be callable, got {type(f).__name__}")
        tool_name = name or getattr(f, "__name__", None) or type(f).__name__
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool_name):
            raise ValueError(f"tool name {tool_name!r} must be 1-64 letters, digits, '_' or '-'")
        if params is not None:
            if not is_pydantic_model(params):
                raise TypeError(
                    f"tool {tool_name}: params= must be a pydantic model class, got {params!r}"
                )
            return _from_model(f, params, tool_name, description)
        return _from_signature(f, tool_name, description)

    return build(fn) if fn is not None else build


def as_tool(obj: Any) -> Tool:
    """A ``Tool`` as it is; a function described from its signature."""
    return obj if isinstance(obj, Tool) else tool(obj)


class ToolSet:
    """The tools of one agent, by name."""

    def __init__(self, tools: Iterable[Any] = ()):
        self.by_name: dict[str, Tool] = {}
        for obj in tools:
            t = as_tool(obj)
            if t.name in self.by_name:
                raise ValueError(f"two tools are named {t.name!r}")
            self.by_name[t.name] = t
        self.specs = [t.spec() for t in self.by_name.values()]

    def __len__(self) -> int:
        return len(self.by_name)

    def get(self, name: str) -> Tool | None:
        return self.by_name.get(name)


def load_tools(paths: str | Iterable[str], project_dir: str | Path | None = None) -> ToolSet:
    """Import tools by path: ``"pkg.module:function"`` each, or one ``"pkg.module:TOOLS"`` naming a
    list. The project folder goes on ``sys.path`` first, as for Python agents. Raises ValueError
    with one line naming the path."""
    if isinstance(paths, str):
        paths = [paths]
    if project_dir is not None and str(project_dir) not in sys.path:
        sys.path.insert(0, str(project_dir))
    found: list[Any] = []
    for path in paths:
        if not isinstance(path, str):
            raise ValueError(f"tools must be import paths 'pkg.module:function', got {path!r}")
        module_name, sep, attr = path.partition(":")
        if not sep or not module_name or not attr:
            raise ValueError(f"tool path must be 'pkg.module:function', got {path!r}")
        try:
            obj: Any = importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001 - any import failure is the user's to see
            raise ValueError(
                f"tool {path}: cannot import {module_name}: {type(exc).__name__}: {exc}"
            ) from None
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise ValueError(f"tool {path}: {module_name} has no attribute {attr!r}")
            obj = getattr(obj, part)
        if isinstance(obj, (list, tuple)):
            found.extend(obj)
        elif callable(obj):
            found.append(obj)
        else:
            raise ValueError(f"tool {path}: {attr} is neither a function nor a list of tools")
    try:
        return ToolSet(found)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"tools: {exc}") from None
