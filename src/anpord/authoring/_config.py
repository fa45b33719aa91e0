"""Run-wide configuration (``evals.config.py``) and variants."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Sequence

__all__ = ["Variant", "EvalConfig", "JudgeConfig", "define_eval_config", "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 120.0


@dataclass(frozen=True)
class JudgeConfig:
    """Where judge models come from (used by judges; see DESIGN §4)."""

    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None


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

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        base = f"{self.harness or 'default'}/{self.model or 'default'}"
        return f"{base}@{self.profile}" if self.profile else base

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
        }


@dataclass(frozen=True)
class EvalConfig:
    harness: str | None = None
    model: str | None = None
    sandbox: str = "local"
    variants: tuple[Variant, ...] = ()
    trials: int = 1
    max_concurrency: int = 8
    max_sandboxes: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    judge: JudgeConfig | None = None
    reporters: tuple[Any, ...] = ()

    def resolved_variants(self) -> tuple[Variant, ...]:
        """The declared variants with config-level defaults filled in."""
        declared = self.variants or (Variant(),)
        return tuple(v.with_defaults(self.harness, self.model, self.sandbox) for v in declared)


def define_eval_config(
    *,
    harness: str | None = None,
    model: str | None = None,
    sandbox: str = "local",
    variants: Sequence[Variant] = (),
    trials: int = 1,
    max_concurrency: int = 8,
    max_sandboxes: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    judge: JudgeConfig | None = None,
    reporters: Sequence[Any] = (),
) -> EvalConfig:
    """Build the run-wide config. ``define_eval_config()`` with no arguments is enough."""
    if not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    if not isinstance(max_concurrency, int) or max_concurrency < 1:
        raise ValueError(f"max_concurrency must be a positive integer, got {max_concurrency!r}")
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    for v in variants:
        if not isinstance(v, Variant):
            raise TypeError(f"variants must hold Variant(...) values, got {type(v).__name__}")
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
    )
