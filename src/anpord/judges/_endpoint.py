"""Which model a judge (or a simulated user) calls, and the HTTP clients that call it.

The model comes from the call's ``model=``, then the case's ``judge=``, then the config's
``JudgeConfig`` (the planner has already merged the last two into the trial's settings). The
endpoint is the chosen ``JudgeConfig``'s ``base_url``, else ``OPENAI_BASE_URL``, else OpenAI.
One client per endpoint serves every trial of the process, so judges share keep-alive
connections; the runner closes them when its run ends."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..authoring._config import JudgeConfig
from ..authoring._judge_spec import JudgeEnv

if TYPE_CHECKING:
    from ..models import ChatClient, ModelClients

__all__ = [
    "DEFAULT_TIMEOUT",
    "Endpoint",
    "JudgeEnv",
    "JudgeSetupError",
    "client_for",
    "close_clients",
    "resolve_endpoint",
]

DEFAULT_TIMEOUT = 60.0  # seconds per judge request; a hung judge is tried again, then void
MAX_ATTEMPTS = 3
HOW_TO = (
    "pass model= to {call}, judge='model-id' to define_eval, or "
    "define_eval_config(judge=JudgeConfig(model=..., base_url=...)) in evals.config.py"
)


class JudgeSetupError(ValueError):
    """No judge model is configured, or its settings cannot make a client (the author's fix)."""


@dataclass(frozen=True)
class Endpoint:
    model: str
    base_url: str
    api_key_env: str
    timeout: float


def _check_model(model: Any, what: str) -> None:
    if (
        model is not None
        and not isinstance(model, JudgeConfig)
        and (not isinstance(model, str) or not model.strip())
    ):
        raise TypeError(
            f"{what} model= must be a model id string or JudgeConfig(...), got {model!r}"
        )


def resolve_endpoint(
    model: str | JudgeConfig | None,
    config: JudgeConfig | None,
    what: str = "judge",
    call: str = "the call",
) -> Endpoint:
    """The endpoint for a call: ``model`` (a model id, or a whole ``JudgeConfig`` whose unset
    fields fall back to ``config``'s) over ``config``. Raises ``JudgeSetupError``."""
    _check_model(model, what)
    base = config or JudgeConfig()
    if isinstance(model, JudgeConfig):
        base = replace(
            base,
            **{
                k: getattr(model, k)
                for k in ("model", "base_url", "api_key_env", "timeout")
                if getattr(model, k) is not None
            },
        )
    elif isinstance(model, str):
        base = replace(base, model=model.strip())
    if not base.model:
        raise JudgeSetupError(f"no {what} model is configured: {HOW_TO.format(call=call)}")
    from ..models import DEFAULT_BASE_URL

    return Endpoint(
        model=base.model,
        base_url=base.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL,
        api_key_env=base.api_key_env or "OPENAI_API_KEY",
        timeout=float(base.timeout or DEFAULT_TIMEOUT),
    )


_clients: ModelClients | None = None


def client_for(endpoint: Endpoint, env: JudgeEnv) -> ChatClient:
    """The shared client for ``endpoint`` (with the run's cache when ``--cache`` is on)."""
    global _clients
    from ..models import DEFAULT_MAX_CONNECTIONS, ModelClients, RetryPolicy

    if _clients is None:
        _clients = ModelClients()
    try:
        return _clients.get(
            endpoint.base_url,
            api_key_env=endpoint.api_key_env,
            timeout=endpoint.timeout,
            # Every running trial may be waiting on its judge at once.
            max_connections=max(DEFAULT_MAX_CONNECTIONS, env.max_concurrency),
            retry=RetryPolicy(max_attempts=MAX_ATTEMPTS),
            cache_dir=env.cache_dir,
        )
    except ValueError as exc:
        raise JudgeSetupError(str(exc)) from None


async def close_clients() -> None:
    """Close every judge client's connections on the running loop (the end of a run)."""
    if _clients is not None:
        await _clients.close()
