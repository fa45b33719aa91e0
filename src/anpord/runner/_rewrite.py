"""Rewrite bare ``assert`` statements in eval files into recorded gates (as pytest does).

``assert a == b, msg`` becomes ``__anpord_assert_cmp__(a, "==", b, "<source>", lambda: msg)``:
a passing assert records a passed gate (so the case checked something), a failing one records
a failed gate with both values and stops the test, like ``t.require``.
"""

from __future__ import annotations

import ast
import contextvars
import operator
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..assertions import Recorder

__all__ = ["rewrite_asserts", "CURRENT_RECORDER", "ASSERT_HELPERS"]

CURRENT_RECORDER: contextvars.ContextVar["Recorder | None"] = contextvars.ContextVar(
    "anpord_recorder", default=None
)

_OPS: dict[type[ast.cmpop], tuple[str, Callable[[Any, Any], Any]]] = {
    ast.Eq: ("==", operator.eq),
    ast.NotEq: ("!=", operator.ne),
    ast.Lt: ("<", operator.lt),
    ast.LtE: ("<=", operator.le),
    ast.Gt: (">", operator.gt),
    ast.GtE: (">=", operator.ge),
    ast.Is: ("is", operator.is_),
    ast.IsNot: ("is not", operator.is_not),
    ast.In: ("in", lambda a, b: a in b),
    ast.NotIn: ("not in", lambda a, b: a not in b),
}
_OP_FNS = {sym: fn for sym, fn in _OPS.values()}


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _record(ok: bool, source: str, expected: Any, actual: Any, message: str) -> None:
    # Imported here: discovery (and so `anpord eval --list`) must not pay for the assertions.
    from ..assertions import GateFailed
    from ..results._model import AssertionRecord

    recorder = CURRENT_RECORDER.get()
    rec = AssertionRecord(
        name=f"assert {source}",
        kind="gate",
        status="passed" if ok else "failed",
        score=1.0 if ok else 0.0,
        expected=expected,
        actual=actual,
        message=message,
    )
    if recorder is not None:
        recorder.record(rec)
    if not ok:
        if recorder is None:
            raise AssertionError(message)
        raise GateFailed(rec)


def _assert_cmp(left: Any, op: str, right: Any, source: str, msg: Callable[[], Any] | None) -> None:
    ok = bool(_OP_FNS[op](left, right))
    message = ""
    if not ok:
        message = f"assert {_short(left)} {op} {_short(right)}"
        if msg is not None:
            message = f"{msg()} — {message}"
    _record(ok, source, right, left, message)


def _assert_truthy(value: Any, source: str, msg: Callable[[], Any] | None) -> None:
    ok = bool(value)
    message = ""
    if not ok:
        message = f"assert {source} (was {_short(value)})"
        if msg is not None:
            message = f"{msg()} — {message}"
    _record(ok, source, None, value, message)


ASSERT_HELPERS = {"__anpord_assert_cmp__": _assert_cmp, "__anpord_assert__": _assert_truthy}


class _Rewriter(ast.NodeTransformer):
    def __init__(self, source: str):
        self.source = source

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        self.generic_visit(node)
        text = ast.get_source_segment(self.source, node.test) or "<expr>"
        msg: ast.expr = ast.Constant(None)
        if node.msg is not None:
            # Lazy like a real assert, unless it awaits (a lambda cannot hold await).
            has_await = any(isinstance(n, ast.Await) for n in ast.walk(node.msg))
            msg = node.msg if has_await else ast.Lambda(
                args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                body=node.msg,
            )
            if has_await:
                msg = ast.Lambda(
                    args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                    body=ast.Constant("(assert message)"),
                )
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _OPS:
            call = ast.Call(
                func=ast.Name("__anpord_assert_cmp__", ast.Load()),
                args=[test.left, ast.Constant(_OPS[type(test.ops[0])][0]), test.comparators[0],
                      ast.Constant(text), msg],
                keywords=[],
            )
        else:
            call = ast.Call(
                func=ast.Name("__anpord_assert__", ast.Load()),
                args=[test, ast.Constant(text), msg],
                keywords=[],
            )
        # Locate only the new statement: fixing the whole module costs seconds on big files.
        return ast.fix_missing_locations(ast.copy_location(ast.Expr(call), node))


def rewrite_asserts(tree: ast.Module, source: str) -> ast.Module:
    return _Rewriter(source).visit(tree)
