"""``t.judge``: model-graded checks of a reply, each a soft assertion handle returned at once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._render import preview
from ..assertions import TrialLog
from ._endpoint import JudgeEnv
from ._judgment import JudgeHandle, Question, launch
from ._prompts import (
    CLOSED_QA_CHOICES,
    FACTUALITY_CHOICES,
    RUBRIC_CHOICES,
    check_choices,
    closed_qa_question,
    factuality_question,
    gather,
    rubric_question,
    text_of,
)

if TYPE_CHECKING:
    from ..authoring._config import JudgeConfig
    from ..authoring._judge_spec import JudgeSpec

__all__ = ["Judges"]

NAME_PREVIEW = 60


def _need_text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"{what} must be a non-empty string, got {value!r}")
    return value


class Judges:
    """A judge model grades ``on`` (the last reply by default) and answers with one declared
    choice; the choice's score is the check's score. Each call returns a soft handle at once
    (threshold 1: any lesser grade makes the trial ``scored``); ``.gate()``, ``.at_least()`` and
    ``.label()`` work as on any check. The call runs while the test goes on and is settled before
    the verdict; a judge that cannot answer makes its check — and the trial — ``void``.

    The judge model is the call's ``model=`` (a model id, or a ``JudgeConfig``), else the case's
    ``judge=``, else the config's ``JudgeConfig``."""

    def __init__(self, state: TrialLog, env: JudgeEnv, reply: Callable[[], str | None]):
        self._state = state
        self._env = env
        self._reply = reply

    def closed_qa(
        self, criteria: str, on: Any = None, *, model: str | JudgeConfig | None = None
    ) -> JudgeHandle:
        """Does the answer meet ``criteria``? Y scores 1, N scores 0."""
        _need_text(criteria, "closed_qa criteria")
        name = f"closed_qa({preview(criteria, NAME_PREVIEW)})"
        answer = self._answer(on, name)
        material = gather(self._state.events, answer)
        return self._launch(
            Question(
                name, closed_qa_question(material, criteria), CLOSED_QA_CHOICES, criteria, answer
            ),
            model,
        )

    def factuality(
        self, expected: Any, on: Any = None, *, model: str | JudgeConfig | None = None
    ) -> JudgeHandle:
        """How do the answer's facts compare with ``expected``? A (a consistent subset) 0.4,
        B (a consistent superset) 0.6, C (the same facts) 1, D (a contradiction) 0, E (differences
        that do not matter) 1."""
        reference = text_of(expected)
        if not reference.strip():
            raise TypeError(f"factuality expected must be a non-empty text, got {expected!r}")
        name = f"factuality({preview(reference, NAME_PREVIEW)})"
        answer = self._answer(on, name)
        material = gather(self._state.events, answer)
        return self._launch(
            Question(
                name,
                factuality_question(material, reference),
                FACTUALITY_CHOICES,
                reference,
                answer,
            ),
            model,
        )

    def rubric(
        self,
        prompt: str,
        choices: Mapping[str, float] | None = None,
        on: Any = None,
        *,
        model: str | JudgeConfig | None = None,
    ) -> JudgeHandle:
        """Which of ``choices`` (names to scores; default correct 1, partial 0.5, incorrect 0)
        does the answer earn under the rubric ``prompt``?"""
        _need_text(prompt, "rubric prompt")
        table = check_choices(RUBRIC_CHOICES if choices is None else choices, "rubric")
        name = f"rubric({preview(prompt, NAME_PREVIEW)})"
        answer = self._answer(on, name)
        material = gather(self._state.events, answer)
        return self._launch(
            Question(name, rubric_question(material, prompt, list(table)), table, prompt, answer),
            model,
        )

    def declared(self, spec: JudgeSpec) -> JudgeHandle:
        """A declarative case's ``judge(...)``: a rubric on the last reply, as a gate."""
        answer = text_of(self._reply())
        material = gather(self._state.events, answer)
        question = Question(
            spec.name,
            rubric_question(material, spec.rubric, list(spec.choices)),
            dict(spec.choices),
            spec.rubric,
            answer,
        )
        return launch(self._state, self._env, question, spec.model).gate(spec.threshold)

    def _answer(self, on: Any, name: str) -> str:
        if on is not None:
            return text_of(on)
        reply = self._reply()
        if reply is None:
            raise ValueError(
                f"{name}: there is no reply to judge yet: send a turn first, or pass on="
            )
        return reply

    def _launch(self, question: Question, model: str | JudgeConfig | None) -> JudgeHandle:
        return launch(self._state, self._env, question, model)
