"""JSON schemas from Python type hints, and the values back into those types.

Covers what tool functions take: str, int, float, bool, None, Any, list/tuple/set/Sequence,
dict/Mapping, Optional and unions, Literal, Enum, TypedDict, dataclasses, ``Annotated[T, "text"]``
(the text becomes the description) and pydantic models (their own schema; pydantic is only used
when a model is given, never imported here)."""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

__all__ = ["SchemaError", "coerce", "is_pydantic_model", "schema_for"]


class SchemaError(TypeError):
    """A type that cannot be described as JSON."""


_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
}
_ARRAYS = (
    list,
    tuple,
    set,
    frozenset,
    collections.abc.Sequence,
    collections.abc.Set,
    collections.abc.Iterable,
    collections.abc.MutableSequence,
)
_OBJECTS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


def is_pydantic_model(tp: Any) -> bool:
    return (
        isinstance(tp, type)
        and callable(getattr(tp, "model_json_schema", None))
        and callable(getattr(tp, "model_validate", None))
    )


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def _json_type(value: Any) -> str | None:
    for py, name in (
        (bool, "boolean"),
        (int, "integer"),
        (float, "number"),
        (str, "string"),
        (type(None), "null"),
    ):
        if isinstance(value, py):
            return name
    return None


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"enum": values}
    kinds = {_json_type(v) for v in values}
    if len(kinds) == 1 and None not in kinds:
        out["type"] = kinds.pop()
    return out


class _Builder:
    """Builds one schema; pydantic ``$defs`` are hoisted to its root so ``#/$defs/..`` refs resolve."""

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        self._stack: list[Any] = []

    def build(self, tp: Any) -> dict[str, Any]:
        if tp is Any or tp is object or tp is typing.Any:
            return {}
        if tp in _SCALARS:
            return dict(_SCALARS[tp])
        if tp is None:
            return {"type": "null"}
        origin = get_origin(tp)
        if origin is typing.Annotated:
            base, *meta = get_args(tp)
            schema = self.build(base)
            text = next((m for m in meta if isinstance(m, str)), None)
            if text:
                schema["description"] = text
            return schema
        if origin is Literal:
            return _enum_schema(list(get_args(tp)))
        if origin is Union or origin is types.UnionType:
            return {"anyOf": [self.build(a) for a in get_args(tp)]}
        if origin in _ARRAYS or tp in _ARRAYS:
            args = get_args(tp)
            if origin is tuple and args and args[-1] is not Ellipsis:
                return {
                    "type": "array",
                    "prefixItems": [self.build(a) for a in args],
                    "minItems": len(args),
                    "maxItems": len(args),
                }
            array: dict[str, Any] = {"type": "array"}
            if args:
                array["items"] = self.build(args[0])
            if origin in (set, frozenset, collections.abc.Set):
                array["uniqueItems"] = True
            return array
        if origin in _OBJECTS or tp in _OBJECTS:
            args = get_args(tp)
            if args and args[0] is not str:
                raise SchemaError(f"{_name(tp)}: JSON object keys are strings")
            mapping: dict[str, Any] = {"type": "object"}
            if len(args) == 2 and args[1] is not Any:
                mapping["additionalProperties"] = self.build(args[1])
            return mapping
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return _enum_schema([m.value for m in tp])
        if tp in self._stack:
            raise SchemaError(f"{_name(tp)} refers to itself: recursive types are not supported")
        self._stack.append(tp)
        try:
            if is_pydantic_model(tp):
                return self._pydantic(tp)
            if _is_typeddict(tp):
                hints = typing.get_type_hints(tp, include_extras=True)
                required = [k for k in hints if k in tp.__required_keys__]
                return _object({k: self.build(v) for k, v in hints.items()}, required)
            if dataclasses.is_dataclass(tp) and isinstance(tp, type):
                hints = typing.get_type_hints(tp, include_extras=True)
                props, required = {}, []
                for f in dataclasses.fields(tp):
                    if not f.init:
                        continue
                    props[f.name] = self.build(hints.get(f.name, Any))
                    if (
                        f.default is dataclasses.MISSING
                        and f.default_factory is dataclasses.MISSING
                    ):
                        required.append(f.name)
                return _object(props, required)
        finally:
            self._stack.pop()
        raise SchemaError(f"cannot describe {_name(tp)} as JSON")

    def _pydantic(self, tp: Any) -> dict[str, Any]:
        schema = dict(tp.model_json_schema())
        for key in ("$defs", "definitions"):
            self.defs.update(schema.pop(key, None) or {})
        return _rebase(schema)


def _rebase(schema: Any) -> Any:
    """Point ``#/definitions/X`` refs at the hoisted ``#/$defs/X``."""
    if isinstance(schema, dict):
        out = {k: _rebase(v) for k, v in schema.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/definitions/"):
            out["$ref"] = "#/$defs/" + ref[len("#/definitions/") :]
        return out
    if isinstance(schema, list):
        return [_rebase(v) for v in schema]
    return schema


def _object(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or repr(tp)


def schema_for(tp: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The schema of ``tp`` and the definitions its ``$ref``s point to (empty for most types)."""
    builder = _Builder()
    schema = builder.build(tp)
    return schema, {k: _rebase(v) for k, v in builder.defs.items()}


def coerce(tp: Any, value: Any) -> Any:
    """A validated JSON value → the annotated Python type (Enum members, dataclasses, tuples,
    sets, pydantic models); anything else is passed as it is."""
    if value is None or tp is Any:
        return value
    origin = get_origin(tp)
    if origin is typing.Annotated:
        return coerce(get_args(tp)[0], value)
    if origin is Union or origin is types.UnionType:
        for arg in get_args(tp):
            if arg is type(None):
                continue
            try:
                return coerce(arg, value)
            except (TypeError, ValueError):
                continue
        return value
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(value)
    if is_pydantic_model(tp):
        return tp.model_validate(value)
    if isinstance(value, list) and (origin in _ARRAYS or tp in _ARRAYS):
        args = get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            items = [coerce(a, v) for a, v in zip(args, value)]
        else:
            items = [coerce(args[0], v) for v in value] if args else list(value)
        if origin in (tuple,) or tp is tuple:
            return tuple(items)
        if origin in (set, frozenset, collections.abc.Set) or tp in (set, frozenset):
            return (frozenset if (origin or tp) is frozenset else set)(items)
        return items
    if isinstance(value, dict) and (origin in _OBJECTS or tp in _OBJECTS):
        args = get_args(tp)
        return {k: coerce(args[1], v) for k, v in value.items()} if len(args) == 2 else value
    if isinstance(value, dict) and dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp)
        return tp(**{k: coerce(hints.get(k, Any), v) for k, v in value.items()})
    if isinstance(value, dict) and _is_typeddict(tp):
        hints = typing.get_type_hints(tp)
        return {k: coerce(hints.get(k, Any), v) for k, v in value.items()}
    return value
