"""Rendering promptfoo's Nunjucks templates with Jinja2, as close to Nunjucks as it comes.

Nunjucks is Jinja's JavaScript port: ``{{ var }}``, filters (``lower``, ``upper``, ``trim``,
``join``, ``length``, ``default``…), ``{% for %}`` and ``{% if %}`` read the same. Where they
differ in output this environment takes Nunjucks' side: ``true``/``false`` for booleans, nothing
for null or an undefined name, JSON for an object or array, and the ``dump`` filter. A template
is rendered in Jinja's sandbox, so a case file's template cannot reach Python's internals.
"""

from __future__ import annotations

import functools
import json
from typing import Any

__all__ = ["RenderFailed", "has_template", "render_template"]


class RenderFailed(Exception):
    """The template could not be rendered; the message names why, on one line."""


def has_template(text: str) -> bool:
    return "{{" in text or "{%" in text or "{#" in text


def _finalize(value: Any) -> Any:
    # What Nunjucks prints for the values Python would print differently.
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # JavaScript has one number type: 3.0 prints as 3
    return value


def _dump(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


# What one template may make by repetition: `{{ "a" * 10**9 }}` would take the machine.
_MAX_REPEAT = 100_000
_MAX_EXPONENT = 1_000


@functools.cache
def _environment() -> Any:
    from jinja2 import ChainableUndefined
    from jinja2.sandbox import SandboxedEnvironment, SecurityError

    class Bounded(SandboxedEnvironment):  # type: ignore[misc]
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "**" and isinstance(right, (int, float)) and abs(right) > _MAX_EXPONENT:
                raise SecurityError(f"an exponent over {_MAX_EXPONENT:,} is not rendered")
            if operator == "*":
                sized = [v for v in (left, right) if isinstance(v, (str, list, tuple))]
                counts = [v for v in (left, right) if isinstance(v, int)]
                if sized and counts and len(sized[0]) * max(counts[0], 0) > _MAX_REPEAT:
                    raise SecurityError(f"a repetition over {_MAX_REPEAT:,} items is not rendered")
            return super().call_binop(context, operator, left, right)

    # ChainableUndefined: `{{ missing.x }}` prints nothing, as in Nunjucks, where Jinja raises.
    # optimized=False: Jinja's compiler would fold constant expressions (`2 ** 10**8`) itself,
    # before the sandbox sees them.
    env = Bounded(
        optimized=False,
        autoescape=False,
        finalize=_finalize,
        keep_trailing_newline=True,
        undefined=ChainableUndefined,
    )
    env.filters["dump"] = _dump
    env.filters.setdefault("safe", lambda value: value)
    return env


@functools.lru_cache(maxsize=256)
def _compiled(text: str) -> Any:
    return _environment().from_string(text)


def render_template(text: str, variables: dict[str, Any]) -> str:
    """``text`` with ``variables`` rendered in; raises ``RenderFailed``."""
    if not has_template(text):
        return text  # nothing to render: the common case for a plain prompt
    from jinja2 import TemplateError

    try:
        return str(_compiled(text).render(variables))
    except TemplateError as error:
        where = f" (line {error.lineno})" if getattr(error, "lineno", None) else ""  # type: ignore[attr-defined]
        raise RenderFailed(f"{type(error).__name__}: {error}{where}") from None
    except RecursionError:
        raise RenderFailed("the template nests too deeply to render") from None
    except Exception as error:  # a filter given a value it cannot take, e.g. `{{ 1 | lower }}`
        raise RenderFailed(f"{type(error).__name__}: {error}") from None
