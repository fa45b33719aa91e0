"""The model proxy as one trial sees it: its own address for the agent's own model calls.

Started on the per-trial service seam (runner/_services). Every trial of a run is served by the
run's one proxy process (``_server``, ``_process``: started with the first trial, on
``127.0.0.1``; where the sandbox closes the network, the trial's own unix socket is bridged in,
as the mocks' are). A trial adds itself there — its token, upstreams, credentials, folders,
prices and, under ``--replay``, its recorded calls — and the process answers what arrives for
it (``_forwarding``): each provider's API by path (``_providers``), forwarded to the caller's
upstream, chunk by chunk. The real credentials stay with the proxy: the agent's key variables
hold per-trial stand-ins, swapped for the real values on the way out. Each call comes back as a
``model.called`` event (``source: "proxy"``) holding what a replay needs (``--replay``:
``_replay``), redacted, priced with the variant's ``options["pricing"]``.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..events import MODEL_CALLED, Event
from . import coding_cli
from ._channel import new_stand_in
from ._forwarding import NO_KEY
from ._providers import BASE_URL_VARIABLES, DEFAULT_UPSTREAMS, KEY_VARIABLES

from ._server import ProxyServer, acquire

if TYPE_CHECKING:
    from .._service_protocol import ServiceContext
    from ._replay import ReplayCalls

__all__ = ["NO_KEY", "ModelProxyService", "ProxyHandle"]

# Each provider's key variables, the first the trial has is the stand-in ``api_key`` gives.
_PROVIDER_KEYS = {
    "openai": ("OPENAI_API_KEY", "CODEX_API_KEY"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"),
}
# The path each provider's SDKs append their requests to (OpenAI's base URL ends in /v1).
_BASE_PATHS = {"openai": "/v1", "anthropic": "", "gemini": ""}


class ProxyHandle:
    """A trial's model proxy as its agent sees it: ``turn.model_proxy`` for a Python agent, and
    ``HarnessContext.extra["model_proxy"]`` for a harness.

    ``url`` is the trial's own address (``ANPORD_MODEL_PROXY_URL``); ``base_url(provider)`` what an
    SDK for ``openai``, ``anthropic`` or ``gemini`` takes as its base URL; ``api_key(provider)`` the
    trial's stand-in for that provider's key (the proxy swaps in the real one); ``env`` the
    variables pointing a program at it (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, …)."""

    def __init__(self, url: str, env: Mapping[str, str]):
        self.url, self.env = url, dict(env)

    def __repr__(self) -> str:  # the stand-ins are not secrets, but nothing to print either
        return f"ProxyHandle({self.url!r})"

    def base_url(self, provider: str = "openai") -> str:
        if provider not in _BASE_PATHS:
            raise ValueError(f"unknown provider {provider!r}: the proxy serves {', '.join(_BASE_PATHS)}")
        return self.url + _BASE_PATHS[provider]

    def api_key(self, provider: str = "openai") -> str:
        if provider not in _PROVIDER_KEYS:
            raise ValueError(f"unknown provider {provider!r}: the proxy serves {', '.join(_PROVIDER_KEYS)}")
        return next((self.env[n] for n in _PROVIDER_KEYS[provider] if n in self.env), NO_KEY)


class ModelProxyService:
    name = "model_proxy"
    needs_sandbox = False

    def __init__(self, replay: ReplayCalls | None = None):
        self.replay = replay
        self.handle: ProxyHandle | None = None
        self.void_reason: str | None = None  # a replayed trial's request the recording lacks
        self.label = ""
        self.stand_ins: frozenset[str] = frozenset()
        self._ctx: ServiceContext | None = None
        self._server: ProxyServer | None = None
        self._token = ""
        self._folder: Path | None = None
        self._own_folder = False
        self._open = True
        self._env: dict[str, str] = {}
        self._streaming = 0  # streams the proxy has begun answering and not yet recorded

    # -- the TrialService protocol ------------------------------------------------------------

    async def start(self, ctx: ServiceContext) -> None:
        self._ctx = ctx
        self.label = ctx.label
        # The run's one proxy process, started by its first proxied trial: this trial is an address on it.
        self._server = server = await acquire()
        sandbox = ctx.sandbox
        config: dict[str, Any] = {"label": ctx.label}
        if sandbox is None:
            # What every trial of the variant shares — upstreams, credentials, prices — is read
            # and sent once a run; the trial names it.
            variant = ctx.variant
            shared, config["shared"] = server.shared(_variant_key(variant), lambda: _variant_config(variant, None))
        else:  # the sandbox's own environment: the trial's
            config.update(shared := _variant_config(ctx.variant, sandbox))
        credentials: dict[str, str] = shared["real"]
        stand_ins = {name: new_stand_in() for name in credentials}
        if self.replay is not None:  # a replay needs no key: a stand-in signs the CLI in
            stand_ins.update((name, new_stand_in()) for name in KEY_VARIABLES if name not in stand_ins)
        self.stand_ins = frozenset(stand_ins.values())
        config["stand_ins"] = stand_ins
        if sandbox is not None:
            workspace, home = sandbox.workspace, sandbox.home
            paths = {str(workspace): "<workspace>", str(home): "<home>"}  # how a request key writes them
            if workspace.parent == home.parent and len(workspace.parent.name) >= 8:
                # The trial's own folder name, however a CLI spells a path holding it (Claude
                # Code names a project folder after the workspace, each non-alphanumeric as "-").
                name = workspace.parent.name
                paths[name] = paths[re.sub(r"[^A-Za-z0-9]", "-", name)] = "<trial>"
            config["paths"] = paths
        if self.replay is not None:
            config["replay"] = {"run": self.replay.run, "key": list(self.replay.key), "calls": self.replay.calls}

        self._token = secrets.token_hex(16)
        pin = None
        if sandbox is not None and sandbox.loopback_bridged:
            pin = self._files() / f".proxy-{server.port}.sock"
        url = await server.register(self._token, self, config, pin)
        if sandbox is not None and pin is not None:
            sandbox.bridge_loopback(server.port, pin)
        full = {**stand_ins, "ANPORD_MODEL_PROXY_URL": url, "OPENAI_BASE_URL": f"{url}/v1",
                "ANTHROPIC_BASE_URL": url, "GOOGLE_GEMINI_BASE_URL": url, "GEMINI_BASE_URL": url}
        self.handle = ProxyHandle(url, full)
        if coding_cli(ctx.variant) is None:
            self._env = full  # every program of the trial calls its model through the proxy
        else:
            # A coding harness points its CLI at the proxy turn by turn (_clis). A replay has no
            # real key to keep: its stand-ins sign the CLI in.
            self._env = {"ANPORD_MODEL_PROXY_URL": url, **(stand_ins if self.replay is not None else {})}

    def _files(self) -> Path:
        if self._folder is None:
            sandbox = self._ctx.sandbox if self._ctx is not None else None
            if sandbox is not None and sandbox.host_paths:  # else the state folder is not the host's
                self._folder = sandbox.state_dir / "proxy"
                self._folder.mkdir(exist_ok=True)
            else:
                self._folder = Path(tempfile.mkdtemp(prefix="anpord-proxy-"))
                self._own_folder = True
        return self._folder

    def env(self) -> dict[str, str]:
        return dict(self._env)

    async def settle(self) -> None:
        """The calls the agent has its answer to are recorded: a plain answer's record reaches the
        run before the answer does, so what the channel holds is read; a stream's last bytes can
        reach the agent before its record, so one still streaming is waited for — a moment, no
        more (an abandoned call would otherwise hold the checks)."""
        server = self._server
        if server is None:
            return
        await server.caught_up()
        if self._streaming > 0:
            await server.settle(self._token)
            await server.caught_up()

    def seal(self) -> None:
        self._open = False

    async def stop(self) -> None:
        self._open = False
        server, self._server = self._server, None
        if server is not None:
            try:
                await server.unregister(self._token)  # its address and stand-ins are refused now
            finally:
                await server.release()
        if self._own_folder and self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)

    # -- what the proxy reports of this trial -------------------------------------------------

    def received(self, message: dict[str, Any]) -> None:
        op, ctx = message["op"], self._ctx
        if op == "began":
            self._streaming += 1
        elif op == "ended":
            self._streaming -= 1
        elif ctx is None:
            return
        elif op == "event":
            if self._open:
                if "log" in message:
                    ctx.log(message["log"])
                ctx.record(Event(MODEL_CALLED, message["data"]))
        elif op == "log":
            ctx.log(message["message"])
        elif op == "void" and self.void_reason is None:
            self.void_reason = message["reason"]
            ctx.log(f"model proxy: {message['reason']}")


def _variant_key(variant: Any) -> tuple[Any, ...]:
    """What ``_variant_config`` reads of a variant (the run's environment is the same for all)."""
    options = variant.options
    pricing = options.get("pricing")
    return (variant.harness, variant.model, tuple(variant.env.items()), options.get("base_url"),
            None if pricing is None else repr(pricing), _registered_key())


def _registered_key() -> tuple[Any, ...]:
    """The prices ``register_price`` has set so far (a config may add one between runs)."""
    from ..models._pricing import _registered

    return tuple(_registered.items())


def _variant_config(variant: Any, sandbox: Any) -> dict[str, Any]:
    """What the proxy needs of a trial's variant: its upstreams, the credentials it keeps (by
    variable) and its prices. In a sandbox, the credentials are only what the trial was given;
    without one, what the harness would read (the run's environment too)."""
    trial_env = sandbox.environment() if sandbox is not None else variant.env
    upstreams: dict[str, str] = {}
    for provider, names in BASE_URL_VARIABLES.items():
        found = next((v for n in names if (v := trial_env.get(n) or os.environ.get(n))), None)
        upstreams[provider] = (found or DEFAULT_UPSTREAMS[provider]).rstrip("/")
    chosen = variant.options.get("base_url") if (variant.harness or "").startswith("openai") else None
    if isinstance(chosen, str) and chosen:  # the openai harness's own option
        upstreams["openai"] = chosen.rstrip("/")
    real: dict[str, str] = {}
    for name in KEY_VARIABLES:
        value = trial_env.get(name) if sandbox is not None else trial_env.get(name) or os.environ.get(name)
        if value:
            real[name] = value
    return {"upstreams": upstreams, "real": real, "prices": _prices(variant)}


def _prices(variant: Any) -> dict[str, dict[str, Any]] | None:
    """The prices the proxy's process applies before its built-in table, as it is sent them:
    what ``register_price`` set in this process (its table is the process's own), then the
    variant's ``options["pricing"]`` over them; None when neither gives one (a bad table is the
    harness's to report; here it prices nothing)."""
    from ..models._pricing import parse_pricing, registered_prices

    prices = registered_prices()
    raw = getattr(variant, "options", {}).get("pricing")
    if raw is not None:
        try:
            prices.update(parse_pricing(raw, getattr(variant, "model", None)))
        except ValueError:
            pass
    if not prices:
        return None
    return {name: {"input": p.input, "output": p.output, "cached_input": p.cached_input}
            for name, p in prices.items()}
