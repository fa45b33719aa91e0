"""``judge(...)``: a declarative case's model-graded gate."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..authoring._config import JudgeConfig
from ._prompts import RUBRIC_CHOICES, check_choices

__all__ = ["JudgeSpec", "judge"]


@dataclass(frozen=True)
class JudgeSpec:
    """A rubric a judge model grades the case's last reply against, as a gate."""

    name: str
    rubric: str
    choices: Mapping[str, float]
    threshold: float = 1.0
    model: str | JudgeConfig | None = None


def judge(
    name: str,
    rubric: str,
    *,
    choices: Mapping[str, float] | None = None,
    threshold: float = 1,
    model: str | JudgeConfig | None = None,
) -> JudgeSpec:
    """For ``define_eval(prompt=..., judges=[judge(...)])``: after the conversation, a judge model
    grades the last reply against ``rubric``, choosing among ``choices`` (names to scores; default
    correct 1, partial 0.5, incorrect 0). The case fails unless the choice scores ``threshold``
    or more; a judge that cannot answer makes the trial ``void``."""
    from .._errors import DefinitionError

    if not isinstance(name, str) or not name.strip():
        raise DefinitionError(f"judge name must be a non-empty string, got {name!r}")
    where = f"judge {name!r}"
    if not isinstance(rubric, str) or not rubric.strip():
        raise DefinitionError(f"{where} rubric must be a non-empty string, got {rubric!r}")
    try:
        table = check_choices(RUBRIC_CHOICES if choices is None else choices, where)
    except (TypeError, ValueError) as exc:
        raise DefinitionError(str(exc)) from None
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, (int, float))
        or not 0 <= threshold <= 1
    ):
        raise DefinitionError(f"{where} threshold must be a number from 0 to 1, got {threshold!r}")
    if not any(score >= threshold for score in table.values()):
        raise DefinitionError(
            f"{where} threshold {threshold:g} is above every choice's score: it could never pass"
        )
    if (
        model is not None
        and not isinstance(model, JudgeConfig)
        and (not isinstance(model, str) or not model.strip())
    ):
        raise DefinitionError(
            f"{where} model must be a model id string or JudgeConfig(...), got {model!r}"
        )
    return JudgeSpec(
        name=name.strip(), rubric=rubric, choices=table, threshold=float(threshold), model=model
    )
