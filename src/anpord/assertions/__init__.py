"""Assertions: records, handles, the per-trial recorder and the scoped assertion methods.

``ScopedAssertions`` is mixed into ``t``, sessions and turns; ``Recorder`` collects a trial's
``AssertionRecord``s; every assertion returns an ``AssertionHandle`` (``.gate()``, ``.soft()``,
``.at_least()``, ``.label()``).
"""

from __future__ import annotations

from ..results._model import AssertionRecord
from ._checks import decode_output
from ._handle import AssertionHandle, decide_status
from ._recorder import GateFailed, Recorder, check_value, clip_actual
from ._scoped import ScopedAssertions
from ._tools import ToolCall, tool_calls_from_events
from ._trial import TrialLog

__all__ = [
    "AssertionHandle",
    "AssertionRecord",
    "GateFailed",
    "Recorder",
    "ScopedAssertions",
    "ToolCall",
    "TrialLog",
    "check_value",
    "clip_actual",
    "decide_status",
    "decode_output",
    "tool_calls_from_events",
]
