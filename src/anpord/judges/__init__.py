"""Judges: a model grades what no string check can decide.

``t.judge.closed_qa`` / ``factuality`` / ``rubric`` (``Judges``) start a judgment and return a
soft ``JudgeHandle`` at once; ``judge(...)`` declares one as a gate of a declarative case. The
call (``ask``) prefers a forced tool call, then a JSON-schema answer, then plain text, learning
per endpoint which it supports; anything short of a declared choice is ``void``, never a pass.
"""

from ._call import JudgeFailed, JudgeReply, ask, forget_endpoints, read_answer
from ._endpoint import (
    DEFAULT_TIMEOUT,
    Endpoint,
    JudgeEnv,
    JudgeSetupError,
    client_for,
    close_clients,
    resolve_endpoint,
)
from ._judgment import JUDGE_COMPLETED, JudgeHandle, Question, launch
from ._namespace import Judges
from ._prompts import CLOSED_QA_CHOICES, FACTUALITY_CHOICES, RUBRIC_CHOICES, SYSTEM_PROMPT
from ..authoring._judge_spec import JudgeSpec, judge

__all__ = [
    "CLOSED_QA_CHOICES",
    "DEFAULT_TIMEOUT",
    "FACTUALITY_CHOICES",
    "JUDGE_COMPLETED",
    "RUBRIC_CHOICES",
    "SYSTEM_PROMPT",
    "Endpoint",
    "JudgeEnv",
    "JudgeFailed",
    "JudgeHandle",
    "JudgeReply",
    "JudgeSetupError",
    "JudgeSpec",
    "Judges",
    "Question",
    "ask",
    "client_for",
    "close_clients",
    "forget_endpoints",
    "judge",
    "launch",
    "read_answer",
    "resolve_endpoint",
]
