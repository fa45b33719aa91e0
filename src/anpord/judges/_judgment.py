"""Starting one judgment within a trial, and the handle it returns.

A judgment is recorded at once — its assertion ``void`` and its ``Judgment`` saying it was not
measured — and its model call starts as a task the trial's recorder settles before the verdict.
So a judge runs alongside whatever the test does next, and one that never answers stays ``void``.
When it settles, the trial's events gain the call's ``usage`` (it counts in the trial's usage)
and a ``judge.completed`` event carrying the judgment.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import exception_line
from ..assertions import AssertionHandle, TrialLog, clip_actual
from ..events import USAGE, Event
from ..results._model import AssertionRecord, Judgment
from ._call import JudgeFailed, ask
from ._endpoint import JudgeEnv, JudgeSetupError, client_for, resolve_endpoint

if TYPE_CHECKING:
    from ..authoring._config import JudgeConfig
    from ..models import ChatResponse

__all__ = ["JUDGE_COMPLETED", "JudgeHandle", "Question", "launch"]

JUDGE_COMPLETED = "judge.completed"
NOT_MEASURED = "not measured before the trial's deadline"


class JudgeHandle(AssertionHandle):
    """An ``AssertionHandle`` whose judgment follows it: a threshold or a label set on the
    handle (before or after the judge answers) is the judgment's too."""

    __slots__ = ("judgment",)

    def __init__(self, record: AssertionRecord, judgment: Judgment) -> None:
        super().__init__(record)
        self.judgment = judgment

    def gate(self, threshold: float = 1) -> JudgeHandle:
        super().gate(threshold)
        return self._sync()

    def soft(self, threshold: float | None = None) -> JudgeHandle:
        super().soft(threshold)
        return self._sync()

    def label(self, name: str) -> JudgeHandle:
        super().label(name)
        return self._sync()

    def _sync(self) -> JudgeHandle:
        record, judgment = self.record, self.judgment
        judgment.name = record.display_name
        judgment.threshold = record.threshold
        if judgment.status != "void":
            judgment.status = "passed" if record.status == "passed" else "failed"
        return self


@dataclass(frozen=True)
class Question:
    """What one judgment asks: ``text`` (without how to answer), the choices and their scores;
    ``expected`` (the criterion, reference or rubric) and ``answer`` are kept in the record."""

    name: str
    text: str
    choices: Mapping[str, float]
    expected: Any
    answer: str


def _usage(response: ChatResponse) -> dict[str, float | None]:
    usage = response.usage
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cost": response.cost,
    }


def launch(
    state: TrialLog,
    env: JudgeEnv,
    question: Question,
    model: str | JudgeConfig | None,
) -> JudgeHandle:
    """Record the judgment (soft, threshold 1 until the caller says otherwise) and start its
    call. A judge that cannot be set up is an ``error`` check at once, naming the fix."""
    record = AssertionRecord(
        name=question.name,
        kind="soft",
        status="void",
        score=0.0,
        threshold=1.0,
        expected=question.expected,
        actual=clip_actual(question.answer),
        message="the judge has not answered",
    )
    judgment = Judgment(
        name=question.name, model=None, status="void", threshold=1.0, error=NOT_MEASURED
    )
    state.recorder.record(record)
    state.recorder.judgments.append(judgment)
    handle = JudgeHandle(record, judgment)
    try:
        endpoint = resolve_endpoint(model, env.config)
        client = client_for(endpoint, env)
    except (JudgeSetupError, TypeError) as exc:
        record.status, record.message = "error", str(exc)
        judgment.error = str(exc)
        return handle
    judgment.model = endpoint.model

    async def measure() -> None:
        response: ChatResponse | None = None
        try:
            reply = await ask(
                client, endpoint, question.text, list(question.choices), env.cache_scope
            )
        except JudgeFailed as exc:
            response = exc.response
            judgment.error = exc.reason
            handle._settle(status="void", message=exc.reason)
        except asyncio.CancelledError:
            judgment.error = NOT_MEASURED
            raise
        except Exception as exc:  # noqa: BLE001 - a fault of anpord's own: void, never a pass
            judgment.error = f"internal error: {exception_line(exc)}"
            handle._settle(status="void", message=judgment.error)
        else:
            response = reply.response
            score = question.choices[reply.choice]
            judgment.choice, judgment.score, judgment.reason = reply.choice, score, reply.reason
            judgment.error = None
            judgment.status = "passed"  # provisional: _sync compares with the threshold
            because = f": {reply.reason}" if reply.reason else ""
            handle._settle(
                score, message=f"the judge chose {reply.choice} (score {score:g}){because}"
            )
        finally:
            handle._sync()
            if response is not None:
                judgment.usage = _usage(response)
                judgment.cached = response.cached
                state.record_event(
                    Event(
                        USAGE,
                        {
                            **judgment.usage,
                            "model": endpoint.model,
                            "cached": response.cached,
                            "source": "judge",
                            "name": judgment.name,
                        },
                    )
                )
            state.record_event(Event(JUDGE_COMPLETED, judgment.to_dict()))

    task = asyncio.ensure_future(measure())
    state.recorder.defer(handle, task)
    return handle
