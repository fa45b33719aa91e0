"""Checking a model's tool arguments against the tool's JSON schema.

A small validator for the keywords tool schemas use (type, enum, const, properties, required,
additionalProperties, items, prefixItems, anyOf/oneOf/allOf, local ``$ref``, bounds, lengths and
patterns). Keywords it does not know are ignored: it may let odd arguments through to the tool,
which then fails on its own, but never refuses valid ones."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["schema_errors"]

_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def schema_errors(value: Any, schema: Mapping[str, Any], limit: int = 5) -> list[str]:
    """Up to ``limit`` messages, each ``path: what is wrong``; empty when ``value`` is valid."""
    errors: list[str] = []
    _check(value, schema, "", schema, errors, limit)
    return errors[:limit]


def _where(path: str) -> str:
    return path or "arguments"


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    seen = 0
    while isinstance(ref, str) and ref.startswith("#/") and seen < 32:
        node: Any = root
        for part in ref[2:].split("/"):
            node = (
                node.get(part.replace("~1", "/").replace("~0", "~"))
                if isinstance(node, Mapping)
                else None
            )
        if not isinstance(node, Mapping):
            return {}
        schema = {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
        ref = node.get("$ref")
        seen += 1
    return schema


def _check(
    value: Any, schema: Any, path: str, root: Mapping[str, Any], errors: list[str], limit: int
) -> None:
    if len(errors) >= limit or not isinstance(schema, Mapping):
        return
    schema = _resolve(schema, root)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if (
            isinstance(options, list)
            and options
            and all(schema_errors_at(value, o, path, root) for o in options)
        ):
            errors.append(f"{_where(path)}: {_short(value)} matches none of the allowed forms")
            return
    for sub in schema.get("allOf") or ():
        _check(value, sub, path, root, errors, limit)
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(_TYPES.get(k, lambda v: True)(value) for k in kinds):
            errors.append(
                f"{_where(path)}: expected {' or '.join(map(str, kinds))}, got {_short(value)}"
            )
            return
    if (
        "enum" in schema
        and isinstance(schema["enum"], list)
        and not any(_same(value, e) for e in schema["enum"])
    ):
        allowed = ", ".join(_short(e) for e in schema["enum"])
        errors.append(f"{_where(path)}: {_short(value)} is not one of {allowed}")
        return
    if "const" in schema and not _same(value, schema["const"]):
        errors.append(f"{_where(path)}: expected {_short(schema['const'])}, got {_short(value)}")
        return
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for key, ok in (
            ("minimum", lambda b: value >= b),
            ("maximum", lambda b: value <= b),
            ("exclusiveMinimum", lambda b: value > b),
            ("exclusiveMaximum", lambda b: value < b),
        ):
            bound = schema.get(key)
            if isinstance(bound, (int, float)) and not ok(bound):
                errors.append(f"{_where(path)}: {value} breaks {key} {bound}")
    if isinstance(value, str):
        if isinstance(schema.get("minLength"), int) and len(value) < schema["minLength"]:
            errors.append(f"{_where(path)}: shorter than {schema['minLength']} characters")
        if isinstance(schema.get("maxLength"), int) and len(value) > schema["maxLength"]:
            errors.append(f"{_where(path)}: longer than {schema['maxLength']} characters")
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                if re.search(pattern, value) is None:
                    errors.append(f"{_where(path)}: does not match {pattern!r}")
            except re.error:
                pass
    if isinstance(value, list):
        if isinstance(schema.get("minItems"), int) and len(value) < schema["minItems"]:
            errors.append(f"{_where(path)}: fewer than {schema['minItems']} items")
        if isinstance(schema.get("maxItems"), int) and len(value) > schema["maxItems"]:
            errors.append(f"{_where(path)}: more than {schema['maxItems']} items")
        prefix = schema.get("prefixItems") if isinstance(schema.get("prefixItems"), list) else []
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else schema.get("items")
            if sub is not None:
                _check(item, sub, f"{path}[{i}]", root, errors, limit)
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
        for name in schema.get("required") or ():
            if name not in value:
                errors.append(f"{_where(path)}: missing required {name!r}")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            sub_path = f"{path}.{name}" if path else str(name)
            if name in props:
                _check(item, props[name], sub_path, root, errors, limit)
            elif extra is False:
                errors.append(
                    f"{_where(path)}: unexpected {name!r} (allowed: {', '.join(props) or 'none'})"
                )
            elif isinstance(extra, Mapping):
                _check(item, extra, sub_path, root, errors, limit)


def schema_errors_at(value: Any, schema: Any, path: str, root: Mapping[str, Any]) -> list[str]:
    errors: list[str] = []
    _check(value, schema, path, root, errors, 1)
    return errors


def _same(a: Any, b: Any) -> bool:
    # JSON equality: True is not 1.
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
