"""Run-wide configuration (``evals.config.py``) and variants."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

__all__ = ["Variant", "EvalConfig", "JudgeConfig", "define_eval_config", "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 120.0


@dataclass(frozen=True)
class JudgeConfig:
    """Where judge (and simulated-user) models come from: the model id, the OpenAI-compatible
    endpoint (else ``OPENAI_BASE_URL``, else OpenAI), the environment variable holding its key
    (else ``OPENAI_API_KEY``), and seconds per request before it is tried again."""

    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    timeout: float | None = None

    def __post_init__(self) -> None:
        for key in ("model", "base_url", "api_key_env"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise TypeError(f"JudgeConfig {key}= must be a non-empty string, got {value!r}")
        timeout = self.timeout
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0
        ):
            raise ValueError(f"JudgeConfig timeout= must be a positive number of seconds, got {timeout!r}")


def _names(key: str, value: Any, *, paths: bool = False) -> tuple[str, ...]:
    """``secrets=`` / ``mounts=`` as a tuple of strings; one string (or path) is one entry."""
    single = (str, os.PathLike) if paths else str
    items = (value,) if isinstance(value, single) else value
    try:
        items = tuple(os.fspath(i) if paths and isinstance(i, os.PathLike) else i for i in items)
    except TypeError:
        raise TypeError(f"Variant {key}= must be a list of strings, got {type(value).__name__}") from None
    for item in items:
        if not isinstance(item, str) or not item:
            raise TypeError(f"Variant {key}= must be a list of non-empty strings, got {item!r}")
    return items


def _positive_int(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{key} must be a positive integer, got {value!r}")
    return value


def check_trials(value: Any) -> None:
    """``trials``: a positive integer, ``"auto"`` or ``"MIN..MAX"`` (adaptive trials)."""
    if not isinstance(value, str):
        _positive_int("trials", value)
        return
    from ..stats._trial_count import parse_trials
    try:
        parse_trials(value)
    except ValueError as exc:
        raise ValueError(f"trials: {exc}") from None


def check_limit(key: str, value: Any) -> None:
    """``token_limit`` (a positive whole number of tokens) or ``cost_limit`` (a positive number
    of US dollars), or None for no limit. Raises ValueError naming the key."""
    if value is None:
        return
    if key == "token_limit":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"token_limit must be a positive whole number of tokens, got {value!r}")
    elif isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise ValueError(f"{key} must be a positive number of US dollars, got {value!r}")


TRACES = (None, "otlp")


@dataclass(frozen=True)
class Variant:
    """One harness + model + sandbox. Its label is ``harness/model[@profile]`` unless named."""

    harness: str | None = None
    model: str | None = None
    sandbox: str | None = None
    name: str | None = None
    profile: str | None = None
    network: bool = False
    env: dict[str, str] = field(default_factory=dict)
    secrets: Sequence[str] = ()
    mounts: Sequence[str] = ()
    # Harness settings that are not a model or a sandbox (a model loop's base_url, system prompt,
    # tools by import path, temperature...): plain data, so a trial can be described to another
    # process. Each harness documents the keys it reads.
    options: Mapping[str, Any] = field(default_factory=dict)
    # "otlp": each trial gets an OTLP/HTTP receiver and the agent's spans become its events
    # (docs/traces.md).
    traces: str | None = None
    # http_mock / cli_mock / mcp_mock values each trial of this variant gets (docs/mocks.md).
    mocks: Sequence[Any] = ()
    # The model proxy (docs/model-proxy.md): None is on for the coding-agent harnesses, off for
    # the others.
    model_proxy: bool | None = None
    # Per trial: past either, the agent is stopped and the trial fails naming it (docs/limits.md).
    token_limit: int | None = None
    cost_limit: float | None = None
    # The docker sandbox (docs/sandboxes.md): the image a trial's container runs, or a Dockerfile
    # (relative to the eval file's folder) to build it from once; and the container's caps.
    # memory= and pids= are the same caps as options={"memory": ..., "pids": ...} (bwrap too).
    image: str | None = None
    dockerfile: str | None = None
    memory: str | int | None = None
    cpus: float | None = None
    pids: int | str | None = None

    def __post_init__(self) -> None:
        for key in ("token_limit", "cost_limit"):
            try:
                check_limit(key, getattr(self, key))
            except ValueError as exc:
                raise ValueError(f"Variant {exc}") from None
        for key in ("harness", "model", "sandbox", "name", "profile", "image", "dockerfile"):
            value = getattr(self, key)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"Variant {key}= must be a string, got {type(value).__name__}")
        if not isinstance(self.network, bool):
            raise TypeError(f"Variant network= must be True or False, got {self.network!r}")
        if not isinstance(self.env, Mapping):
            raise TypeError(f"Variant env= must be a dict of names to values, got {type(self.env).__name__}")
        if not isinstance(self.options, Mapping) or not all(isinstance(k, str) for k in self.options):
            raise TypeError(f"Variant options= must be a dict of names to values, got {self.options!r}")
        if self.cpus is not None and (
            isinstance(self.cpus, bool) or not isinstance(self.cpus, (int, float)) or self.cpus <= 0
        ):
            raise ValueError(f"Variant cpus= must be a positive number of CPUs, got {self.cpus!r}")
        if self.model_proxy is not None and not isinstance(self.model_proxy, bool):
            raise TypeError(f"Variant model_proxy= must be True, False or None, got {self.model_proxy!r}")
        if self.traces not in TRACES:
            raise ValueError(f"Variant traces= must be 'otlp' or None, got {self.traces!r}")
        # A lone string would otherwise be read one character at a time.
        object.__setattr__(self, "secrets", _names("secrets", self.secrets))
        object.__setattr__(self, "mounts", _names("mounts", self.mounts, paths=True))
        if self.mocks:
            from ..mocks._declare import check_mocks

            object.__setattr__(self, "mocks", check_mocks(self.mocks, "Variant"))
        else:
            object.__setattr__(self, "mocks", ())

    @property
    def label(self) -> str:
        # Read for every trial and event on the hot path: computed once (the variant is frozen).
        try:
            return self.__dict__["_label"]
        except KeyError:
            pass
        if self.name:
            label = self.name
        else:
            base = f"{self.harness or 'default'}/{self.model or 'default'}"
            label = f"{base}@{self.profile}" if self.profile else base
        self.__dict__["_label"] = label
        return label

    def with_defaults(self, harness: str | None, model: str | None, sandbox: str | None) -> "Variant":
        return replace(
            self,
            harness=self.harness or harness,
            model=self.model if self.model is not None else model,
            sandbox=self.sandbox or sandbox or "local",
        )

    def snapshot(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "harness": self.harness,
            "model": self.model,
            "sandbox": self.sandbox,
            "name": self.name,
            "profile": self.profile,
            "network": self.network,
            "env": sorted(self.env),  # names only: values may be sensitive
            "secrets": list(self.secrets),
            "mounts": list(self.mounts),
            "options": dict(self.options),
            "traces": self.traces,
            **({"token_limit": self.token_limit} if self.token_limit is not None else {}),
            **({"cost_limit": self.cost_limit} if self.cost_limit is not None else {}),
            **({"mocks": [m.name for m in self.mocks]} if self.mocks else {}),
            **{k: getattr(self, k) for k in _CONTAINER_FIELDS if getattr(self, k) is not None},
            **({"model_proxy": self.model_proxy} if self.model_proxy is not None else {}),
        }


_CONTAINER_FIELDS = ("image", "dockerfile", "memory", "cpus", "pids")


@dataclass(frozen=True)
class EvalConfig:
    harness: str | None = None
    model: str | None = None
    sandbox: str = "local"
    variants: tuple[Variant, ...] = ()
    trials: int | str = 1  # N, "auto" or "MIN..MAX" (adaptive trials: docs/statistics.md)
    max_concurrency: int = 8
    max_sandboxes: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    judge: JudgeConfig | None = None
    reporters: tuple[Any, ...] = ()
    executor: str = "local"
    mocks: tuple[Any, ...] = ()  # every trial's, under the variant's and the case's own
    token_limit: int | None = None  # per trial, under the variant's and the case's own
    cost_limit: float | None = None


EXECUTORS = ("local", "ray")


def define_eval_config(
    *,
    harness: str | None = None,
    model: str | None = None,
    sandbox: str = "local",
    variants: Sequence[Variant] = (),
    trials: int | str = 1,
    max_concurrency: int = 8,
    max_sandboxes: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    judge: JudgeConfig | None = None,
    reporters: Sequence[Any] = (),
    executor: str = "local",
    mocks: Sequence[Any] = (),
    token_limit: int | None = None,
    cost_limit: float | None = None,
) -> EvalConfig:
    """Build the run-wide config. ``define_eval_config()`` with no arguments is enough."""
    check_trials(trials)
    _positive_int("max_concurrency", max_concurrency)
    if max_sandboxes is not None:  # None is unlimited; 0 would read as unlimited too, so refuse it
        _positive_int("max_sandboxes", max_sandboxes)
    for key, value in (("harness", harness), ("model", model)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{key} must be a string, got {type(value).__name__}")
    if not isinstance(sandbox, str) or not sandbox:
        raise TypeError(f"sandbox must be a sandbox name such as 'local', got {sandbox!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    check_limit("token_limit", token_limit)
    check_limit("cost_limit", cost_limit)
    if isinstance(variants, Variant):
        variants = (variants,)
    for v in variants:
        if not isinstance(v, Variant):
            raise TypeError(f"variants must hold Variant(...) values, got {type(v).__name__}")
    if judge is not None and not isinstance(judge, JudgeConfig):
        raise TypeError(f"judge must be JudgeConfig(...), got {type(judge).__name__}")
    if not isinstance(executor, str) or not executor:
        # Any name: built-ins and plugins are known to the runner, which refuses an unknown one.
        raise ValueError(f"executor must be a name ({', '.join(EXECUTORS)} or a plugin's), got {executor!r}")
    return EvalConfig(
        harness=harness,
        model=model,
        sandbox=sandbox,
        variants=tuple(variants),
        trials=trials,
        max_concurrency=max_concurrency,
        max_sandboxes=max_sandboxes,
        timeout=float(timeout),
        judge=judge,
        reporters=tuple(reporters),
        executor=executor,
        mocks=_config_mocks(mocks),
        token_limit=token_limit,
        cost_limit=cost_limit,
    )


def _config_mocks(mocks: Sequence[Any]) -> tuple[Any, ...]:
    if not mocks:
        return ()
    from ..mocks._declare import check_mocks

    return check_mocks(mocks, "define_eval_config")
