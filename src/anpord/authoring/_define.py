"""``define_eval`` and ``define_suite``: what an eval file binds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from .._errors import DefinitionError  # re-exported here; its home is the lowest floor
from ._config import JudgeConfig, Variant
from ..workspace import Source

__all__ = ["Eval", "Suite", "define_eval", "define_suite", "DefinitionError"]


@dataclass(frozen=True)
class Eval:
    """One case, or one case per row of ``each``."""

    test: Callable[..., Any] | None = None
    id: Any = None
    name: str | None = None
    description: str | None = None
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] | None = None
    timeout: float | None = None
    trials: int | str | None = None
    judge: Any = None
    each: Sequence[Any] | None = None
    prompt: Any = None
    source: Source | None = None
    validate: Any = None
    judges: tuple[Any, ...] = ()
    user: Any = None
    max_turns: int | None = None
    mocks: tuple[Any, ...] = ()  # http_mock / cli_mock / mcp_mock (docs/mocks.md)
    token_limit: int | None = None  # per trial (docs/limits.md)
    cost_limit: float | None = None

    @property
    def declarative(self) -> bool:
        return self.test is None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Keeps a decorated test callable as a plain function for users who want to reuse it.
        if self.test is None:
            raise TypeError("a declarative eval is not callable")
        return self.test(*args, **kwargs)


@dataclass(frozen=True)
class Suite:
    """Declarative cases that share variants, trials and a source."""

    cases: tuple[Eval, ...]
    variants: tuple[Variant, ...] = ()
    trials: int | str | None = None
    source: Source | None = None
    timeout: float | None = None
    tags: tuple[str, ...] = ()
    mocks: tuple[Any, ...] = ()
    token_limit: int | None = None  # per trial, under each case's own (docs/limits.md)
    cost_limit: float | None = None


_EVAL_KEYS = (
    "id name description tags metadata timeout trials judge each prompt source validate judges user "
    "max_turns mocks token_limit cost_limit"
).split()


def _tags(value: Any, where: str) -> tuple[str, ...]:
    """``tags=`` as a tuple of strings; one string is one tag, not one tag per character."""
    try:
        tags = (value,) if isinstance(value, str) else tuple(value or ())
    except TypeError:
        raise DefinitionError(f"{where} tags must be a list of strings, got {value!r}") from None
    for tag in tags:
        if not isinstance(tag, str) or not tag:
            raise DefinitionError(f"{where} tags must be non-empty strings, got {tag!r}")
    return tags


def _check_trials(trials: Any) -> None:
    if trials is None:
        return
    if not isinstance(trials, str):
        if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
            raise DefinitionError(f"trials must be a positive integer, got {trials!r}")
        return
    from ..stats._trial_count import parse_trials

    try:
        parse_trials(trials)
    except ValueError as exc:
        raise DefinitionError(f"trials must be a positive integer, \"auto\" or \"MIN..MAX\": {exc}") from None


def _check_timeout(timeout: Any) -> None:
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0
    ):
        raise DefinitionError(f"timeout must be a positive number of seconds, got {timeout!r}")


def _check_limits(token_limit: Any, cost_limit: Any) -> None:
    from ._config import check_limit

    for key, value in (("token_limit", token_limit), ("cost_limit", cost_limit)):
        try:
            check_limit(key, value)
        except ValueError as exc:
            raise DefinitionError(str(exc)) from None


def _check_source(source: Any) -> None:
    if source is not None and not hasattr(source, "materialize"):
        raise DefinitionError(
            f"source must be files(...), directory(...) or repo(...), got {type(source).__name__}"
        )


def _check(ev: Eval) -> Eval:
    if ev.test is not None and ev.prompt is not None:
        raise DefinitionError("define_eval takes either test or prompt=, not both")
    if ev.test is None and ev.prompt is None:
        raise DefinitionError("define_eval needs a test function or a prompt=")
    if ev.test is not None and not callable(ev.test):
        raise DefinitionError(f"test must be a function, got {type(ev.test).__name__}")
    if ev.validate is not None and ev.test is not None:
        raise DefinitionError("validate= belongs to declarative cases (prompt=), not to test functions")
    _check_trials(ev.trials)
    _check_timeout(ev.timeout)
    _check_limits(ev.token_limit, ev.cost_limit)
    if ev.each is not None and isinstance(ev.each, (str, bytes, Mapping)):
        raise DefinitionError("each= must be a sequence of rows (a list), not a string or mapping")
    _check_judging(ev)
    _check_source(ev.source)
    return ev


def _judges(value: Any) -> tuple[Any, ...]:
    """``judges=`` as a tuple; one ``judge(...)`` alone is a list of one."""
    from ._judge_spec import JudgeSpec

    if value is None:
        return ()
    if isinstance(value, JudgeSpec):
        return (value,)
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise DefinitionError(f"judges= must be a list of judge(...) values, got {type(value).__name__}")
    return tuple(value)


def _check_judging(ev: Eval) -> None:
    """``judge=``, ``judges=``, ``user=`` and ``max_turns=``: the model-graded parts of a case."""
    from ._judge_spec import JudgeSpec
    from ._user import SimulatedUser

    if ev.judge is not None and not isinstance(ev.judge, JudgeConfig) and (
        not isinstance(ev.judge, str) or not ev.judge.strip()
    ):
        raise DefinitionError(f"judge= must be a model id string or JudgeConfig(...), got {ev.judge!r}")
    if ev.test is not None:
        for key in ("judges", "user", "max_turns"):
            if getattr(ev, key) not in (None, ()):
                hint = " (in a test function, use t.judge)" if key == "judges" else ""
                raise DefinitionError(f"{key}= belongs to declarative cases (prompt=), not to test functions{hint}")
    names: set[str] = set()
    for i, spec in enumerate(ev.judges):
        if not isinstance(spec, JudgeSpec):
            raise DefinitionError(f"judges[{i}] must be judge(name, rubric, ...), got {type(spec).__name__}")
        if spec.name in names:
            raise DefinitionError(f"judges= has two judges named {spec.name!r}")
        names.add(spec.name)
    if ev.user is not None and (isinstance(ev.user, type) or not isinstance(ev.user, SimulatedUser)):
        raise DefinitionError(
            f"user= must be script([...]) or persona(goal=..., brief=...), got {type(ev.user).__name__}"
        )
    if ev.max_turns is not None:
        if isinstance(ev.max_turns, bool) or not isinstance(ev.max_turns, int) or ev.max_turns < 1:
            raise DefinitionError(f"max_turns must be a positive integer, got {ev.max_turns!r}")
        if ev.user is None:
            raise DefinitionError("max_turns= limits a conversation with a simulated user: give user= too")


def define_eval(test: Callable[..., Any] | None = None, /, **kwargs: Any) -> Any:
    """Define a case. Works bare (``@define_eval``), with keywords (``@define_eval(tags=[...])``)
    and as a plain call (``define_eval(prompt=..., validate=...)``)."""
    unknown = set(kwargs) - set(_EVAL_KEYS) - {"test"}
    if unknown:
        hint = ""
        if "variants" in unknown:
            hint = " (variants belong to define_suite(...) or define_eval_config(...))"
        elif "tag" in unknown:
            hint = " (did you mean tags=?)"
        raise DefinitionError(f"define_eval got unknown keyword(s): {', '.join(sorted(unknown))}{hint}")
    if "test" in kwargs:
        if test is not None:
            raise DefinitionError("define_eval got test twice")
        test = kwargs.pop("test")
    kwargs["tags"] = _tags(kwargs.get("tags"), "define_eval")
    kwargs["judges"] = _judges(kwargs.get("judges"))
    if kwargs.get("mocks"):
        from ..mocks._declare import check_mocks

        kwargs["mocks"] = check_mocks(kwargs["mocks"], "define_eval")
    else:
        kwargs.pop("mocks", None)
    if "each" in kwargs and kwargs["each"] is not None:
        kwargs["each"] = list(kwargs["each"])

    if test is None and kwargs.get("prompt") is None:
        # Decorator with keywords: @define_eval(tags=[...])
        def decorate(fn: Callable[..., Any]) -> Eval:
            return _check(Eval(test=fn, **kwargs))

        return decorate
    return _check(Eval(test=test, **kwargs))


def define_suite(
    cases: Iterable[Eval],
    *,
    variants: Sequence[Variant] = (),
    trials: int | str | None = None,
    source: Source | None = None,
    timeout: float | None = None,
    tags: Sequence[str] = (),
    mocks: Sequence[Any] = (),
    token_limit: int | None = None,
    cost_limit: float | None = None,
) -> Suite:
    """Group cases under shared variants, trials and source."""
    if isinstance(cases, (Eval, str)) or not isinstance(cases, Iterable):
        raise DefinitionError("define_suite cases must be a list of define_eval(...) values")
    case_list = tuple(cases)
    for c in case_list:
        if not isinstance(c, Eval):
            raise DefinitionError(f"define_suite cases must be define_eval(...) values, got {type(c).__name__}")
    for v in variants:
        if not isinstance(v, Variant):
            raise DefinitionError(f"define_suite variants must be Variant(...) values, got {type(v).__name__}")
    _check_trials(trials)
    _check_timeout(timeout)
    _check_source(source)
    _check_limits(token_limit, cost_limit)
    return Suite(
        cases=case_list,
        variants=tuple(variants),
        trials=trials,
        source=source,
        timeout=timeout,
        tags=_tags(tags, "define_suite"),
        mocks=_suite_mocks(mocks),
        token_limit=token_limit,
        cost_limit=cost_limit,
    )


def _suite_mocks(mocks: Sequence[Any]) -> tuple[Any, ...]:
    if not mocks:
        return ()
    from ..mocks._declare import check_mocks

    return check_mocks(mocks, "define_suite")

