"""The model proxy: each trial's own endpoint for the agent's model calls (docs/model-proxy.md).

``Variant(model_proxy=True)`` (the default for the coding-agent harnesses) gives each trial its
own address on the run's one proxy server, a process of its own (``_server`` starts it,
``_process`` is it); the agent's model variables point at it, its real credentials stay with the
proxy, and each call is a ``model.called`` event. ``--replay RUN``
answers from a run's recorded calls instead.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["PROXIED_HARNESSES", "close_shared_server", "coding_cli", "discard_early_server", "hold_shared_server",
           "start_shared_server_early", "wants_proxy"]

# Harnesses whose trials get a proxy unless the variant says model_proxy=False.
PROXIED_HARNESSES = frozenset({"claude", "codex", "gemini", "opencode"})


def wants_proxy(variant: Any) -> bool:
    chosen = getattr(variant, "model_proxy", None)
    if chosen is not None:
        return bool(chosen)
    return (getattr(variant, "harness", None) or "").partition(":")[0] in PROXIED_HARNESSES


def coding_cli(variant: Any) -> str | None:
    """The coding CLI a variant runs, or None: such a harness points its CLI at the proxy itself
    (``_clis``), so the proxy's variables are not given to every program of the trial."""
    name = (getattr(variant, "harness", None) or "").partition(":")[0]
    return name if name in PROXIED_HARNESSES else None


def hold_shared_server() -> None:
    """A run starts on the running loop: the proxy server its first proxied trial starts stays
    open between trials until ``close_shared_server()``."""
    from ._server import hold_shared

    hold_shared()


def start_shared_server_early() -> None:
    """A run with proxied trials is about to start in this process: its proxy's process starts
    now, and the run's first proxied trial adopts it (``_server.start_early``)."""
    from ._server import start_early

    start_early()


def discard_early_server() -> None:
    """The run has ended: a process ``start_shared_server_early`` started and no trial adopted exits."""
    from ._server import discard_early

    discard_early()


async def close_shared_server() -> None:
    """The run has ended: the loop's proxy server closes (if one was ever started)."""
    if "anpord.proxy._server" in sys.modules:  # nothing to close when no trial was proxied
        from ._server import close_shared

        await close_shared()
