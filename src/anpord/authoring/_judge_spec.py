"""What a case declares of its judges, as plain data on the definitions' floor: ``judge(...)``
(a declarative case's model-graded gate), its rubric's choices, and ``JudgeEnv`` (the judge
settings and cache one trial's judges and simulated users take from the run). The judges that
run them live in ``anpord.judges``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._config import JudgeConfig

if TYPE_CHECKING:
    from ..models import CacheScope

__all__ = ["RUBRIC_CHOICES", "JudgeEnv", "JudgeSpec", "check_choices", "judge"]

RUBRIC_CHOICES: Mapping[str, float] = {"correct": 1.0, "partial": 0.5, "incorrect": 0.0}


def check_choices(choices: Any, where: str) -> dict[str, float]:
    """``choices`` as ``{name: score}``: at least two non-empty names, scores from 0 to 1.
    Raises TypeError/ValueError naming ``where``."""
    if not isinstance(choices, Mapping):
        raise TypeError(
            f"{where} choices must be a dict of choice names to scores, got {type(choices).__name__}"
        )
    out: dict[str, float] = {}
    for name, score in choices.items():
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"{where} choice names must be non-empty strings, got {name!r}")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
            raise ValueError(
                f"{where} choice {name!r} must score a number from 0 to 1, got {score!r}"
            )
        out[name.strip()] = float(score)
    if len(out) < 2:
        raise ValueError(f"{where} needs at least two choices, got {list(out)}")
    return out


class JudgeEnv:
    """What one trial's judges and simulated users take from the run: the judge settings its
    case resolved, and the request cache (``--cache``) with the trial's own scope in it, so
    repeated trials never share an answer."""

    def __init__(
        self,
        config: JudgeConfig | None = None,
        *,
        cache_dir: Path | None = None,
        trial_index: int = 0,
        seed: int | None = None,
        max_concurrency: int = 1,
    ):
        self.config = config
        self.cache_dir = cache_dir
        self.trial_index = trial_index
        self.seed = seed
        self.max_concurrency = max_concurrency
        self._scope: CacheScope | None = None

    @property
    def cache_scope(self) -> CacheScope | None:
        if self.cache_dir is None:
            return None
        if self._scope is None:
            from ..models import CacheScope

            self._scope = CacheScope(self.trial_index)
        return self._scope




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
