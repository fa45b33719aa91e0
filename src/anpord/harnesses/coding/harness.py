"""The coding-agent harnesses: ``"claude"``, ``"codex"``, ``"gemini"``, ``"opencode"``.

Each turn runs the CLI once, unattended, in the trial's sandbox with the workspace as its current
folder: the argv its command builder gives (stream output, no approvals, the variant's model,
``--resume``-style continuation of the session the previous turn reported), the prompt on stdin
from a file, and its own JSON stream read by its parser into anpord events as they arrive. The
turn fails (``failure`` set, so the trial fails) when the stream reports an error or ends without
its final event; the trial is ``void`` when the CLI is not installed, cannot start in the
sandbox, has no credential, or its profile cannot be applied.

Spec: the CLI's name, or ``name:/path/to/binary`` to run another copy. Variant options:

- ``executable``: a program name looked up on the trial's PATH, or a path (relative to the
  project folder);
- ``args``: extra arguments, put right after the CLI's own flags (``["--max-turns", "20"]``);
- ``system_prompt``: text added after the profile's system prompt;
- ``check_credentials``: ``False`` skips the sign-in check (a local model, a custom gateway);
- ``pricing``: prices for the model proxy's calls and the trial's limits, as the ``openai:``
  harness takes them (read by the proxy and the limit watcher, not by the CLI).

The variant's profile (``_profile``) is applied once per trial, before the first turn.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...events import PROCESS_EXITED, Event, message_text
from .._process import ProgramRun, ProgramSession
from .._profile import (
    Profile,
    ProfileError,
    check_profiles,
    copy_profile_files,
    find_profiles_dir,
    load_profile,
)
from .._protocol import (
    Emit,
    HarnessContext,
    HarnessSpecError,
    HarnessStartError,
    TurnOutcome,
    TurnRequest,
)
from . import CODING_CLIS, CodingCli
from ._stderr import GEMINI_DEBUG_LINE, stderr_reason
from .codex import CodexStreamParser, ThreadUsage

if TYPE_CHECKING:
    from ...sandboxes._protocol import SandboxInstance

__all__ = [
    "OPTIONS",
    "PROCESS_EXITED",
    "PROFILE_APPLIED",
    "CodingHarness",
    "CodingSession",
    "resolve",
]

# The trial's profile: {name, hash, files, install: [{command, exit_code, duration}]}.
PROFILE_APPLIED = "profile.applied"
OPTIONS = ("args", "check_credentials", "executable", "pricing", "system_prompt")
# Where extra ``args`` go: after the executable, or after its subcommand.
_ARGS_AT = {"codex": 2, "opencode": 2}
_SHOWN_ARG = 200  # a longer argument (a system prompt) is shown by its length in process.exited
_TAIL_LINES = 20


def resolve(spec: str, project_dir: Path | None = None) -> CodingHarness:
    """``"claude"`` or ``"claude:/opt/claude/bin/claude"`` → a harness. Every profile under the
    project's evals roots is checked now, so a broken one stops the run before it starts."""
    name, sep, executable = spec.partition(":")
    cli = CODING_CLIS.get(name)
    if cli is None:
        known = ", ".join(sorted(CODING_CLIS))
        raise HarnessSpecError(f"unknown coding agent {name!r} in {spec!r}: known: {known}")
    executable = executable.strip()
    if sep and not executable:
        raise HarnessSpecError(
            f"{spec!r}: give the CLI's path after the colon ({name}:/path/to/{name})"
        )
    if project_dir is not None and project_dir.is_dir():
        for root in sorted(d for d in project_dir.iterdir() if (d / "evals.config.py").is_file()):
            try:
                check_profiles(root / "profiles")
            except ProfileError as exc:
                raise HarnessSpecError(str(exc)) from None
    return CodingHarness(cli, spec, executable or None, project_dir)


@dataclass
class _Settings:
    """A variant's settings for this harness, checked once per session."""

    executable: str
    args: tuple[str, ...]
    system_prompt: str | None
    env: dict[str, str]  # the profile's variables, then the variant's (these win)


@dataclass
class _TrialState:
    """What is done once per trial (per sandbox instance), whichever session comes first."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    prepared: bool = False
    error: str | None = None
    profile: Profile | None = None
    installs: list[dict[str, Any]] = field(default_factory=list)
    announced: bool = False
    written: set[tuple[str, str]] = field(default_factory=set)  # setup files already written


class CodingHarness:
    needs_sandbox = True

    def __init__(self, cli: CodingCli, spec: str, executable: str | None, project_dir: Path | None):
        self.cli = cli
        self.spec = spec
        self.executable = executable
        self.project_dir = project_dir
        self._trials: weakref.WeakKeyDictionary[Any, _TrialState] = weakref.WeakKeyDictionary()

    @property
    def name(self) -> str:
        return self.cli.name

    async def setup(self) -> None:
        pass  # each turn is its own process: nothing is shared across trials

    async def teardown(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"CodingHarness({self.spec!r})"

    # -- once per trial ----------------------------------------------------------------------

    def _state(self, sandbox: SandboxInstance) -> _TrialState:
        state = self._trials.get(sandbox)
        if state is None:
            state = self._trials[sandbox] = _TrialState()
        return state

    def _profile(self, ctx: HarnessContext) -> Profile | None:
        name = ctx.variant.profile
        if not name:
            return None
        try:
            return load_profile(name, find_profiles_dir(name, self.project_dir, ctx.evals_root))
        except ProfileError as exc:
            raise HarnessStartError(str(exc)) from None

    async def prepare_sandbox(self, ctx: HarnessContext) -> None:
        """Apply the variant's profile to the trial's sandbox: its files into HOME and the
        workspace, then its install steps. Once per trial; a failure voids the trial."""
        sandbox = _need_sandbox(ctx, self.name)
        state = self._state(sandbox)
        async with state.lock:
            if not state.prepared:
                state.prepared = True
                try:
                    await self._prepare(ctx, sandbox, state)
                except HarnessStartError as exc:
                    state.error = str(exc)
            if state.error is not None:
                raise HarnessStartError(state.error)

    async def _prepare(
        self, ctx: HarnessContext, sandbox: SandboxInstance, state: _TrialState
    ) -> None:
        from ...sandboxes._protocol import SandboxError

        profile = state.profile = self._profile(ctx)
        if profile is None:
            return
        try:
            if sandbox.host_paths:  # merged in place, refusing to write through links
                await asyncio.to_thread(copy_profile_files, profile, sandbox.home, sandbox.workspace)
            else:
                for sub, dest in (("home", sandbox.home), ("workspace", sandbox.workspace)):
                    src = profile.folder / sub
                    if src.is_dir() and not src.is_symlink():
                        await sandbox.copy_in(src, dest)
        except (OSError, ProfileError, SandboxError) as exc:
            raise HarnessStartError(
                f"profile {profile.name!r}: could not copy its files: {exc}"
            ) from None
        env = {**profile.env, **ctx.variant.env}
        for step in profile.install:
            state.installs.append(await _install(ctx, sandbox, profile, step, env))

    # -- sessions ----------------------------------------------------------------------------

    async def open_session(self, ctx: HarnessContext, session_id: str) -> CodingSession:
        sandbox = _need_sandbox(ctx, self.name)
        await self.prepare_sandbox(ctx)  # nothing to do when the runner did it already
        state = self._state(sandbox)
        settings = await self._settings(ctx, sandbox, state.profile)
        await self._check_credentials(ctx, sandbox, settings)
        return CodingSession(self, ctx, sandbox, session_id, settings, state)

    async def _settings(
        self, ctx: HarnessContext, sandbox: SandboxInstance, profile: Profile | None
    ) -> _Settings:
        options = dict(ctx.variant.options)
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise HarnessStartError(
                f"the {self.name} harness has no option {unknown[0]!r}; its options are "
                + ", ".join(OPTIONS)
            )
        args = options.get("args", ())
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise HarnessStartError(
                f"the {self.name} harness: options['args'] must be a list of strings"
            )
        extra = options.get("system_prompt")
        if extra is not None and not isinstance(extra, str):
            raise HarnessStartError(
                f"the {self.name} harness: options['system_prompt'] must be text"
            )
        prompts = [
            p for p in (profile.system_prompt if profile else None, extra) if p and p.strip()
        ]
        env = {
            **(profile.env if profile else {}),
            **{str(k): str(v) for k, v in ctx.variant.env.items()},
        }
        executable = await self._executable(options.get("executable"), sandbox, sandbox.environment(env))
        mcp_config = sandbox.environment().get("ANPORD_MCP_CONFIG")
        if mcp_config:  # the trial's MCP mocks, in the CLI's own configuration
            from ...mocks._register import RegistrationError, register_mcp

            try:
                args = (*await register_mcp(self.cli.info.name, mcp_config, sandbox.home, sandbox), *args)
            except RegistrationError as exc:  # the trial cannot be run as configured: void, saying where
                written = profile.folder / "home" / exc.file if profile is not None else None
                origin = f" (copied from {written})" if written is not None and written.is_file() else ""
                raise HarnessStartError(f"the {self.name} harness: {exc}{origin}") from None
        return _Settings(executable, tuple(args), "\n\n".join(prompts) or None, env)

    async def _executable(self, chosen: Any, sandbox: SandboxInstance, env: Mapping[str, str]) -> str:
        info = self.cli.info
        if chosen is not None and (not isinstance(chosen, str) or not chosen.strip()):
            raise HarnessStartError(
                f"the {self.name} harness: options['executable'] must be a name or a path"
            )
        wanted = chosen or self.executable or info.executable
        if "/" in wanted:
            path = Path(wanted).expanduser()
            if not path.is_absolute() and self.project_dir is not None:
                path = self.project_dir / path
            if not sandbox.host_paths:  # the CLI is the one inside: looked at there, below
                found = await _inside_lookup(sandbox, str(path), env)
                if found is None:
                    raise HarnessStartError(f"{info.title} ({self.name}) at {path}: not an executable file in the sandbox")
                return found
            if not path.is_file() or not os.access(path, os.X_OK):
                what = "not an executable file" if path.exists() else "not found"
                raise HarnessStartError(f"{info.title} ({self.name}) at {path}: {what}")
            return str(path)
        if sandbox.host_paths:
            found = shutil.which(wanted, path=env.get("PATH"))
        else:
            found = await _inside_lookup(sandbox, wanted, env)
        if found is None:
            hint = (
                info.install_command
                if wanted == info.executable
                else f"{wanted} is not on the trial's PATH"
            )
            raise HarnessStartError(
                f"{wanted} is not installed: {hint}, or point the variant at it with "
                "options={'executable': ...}"
            )
        return found

    async def _check_credentials(
        self, ctx: HarnessContext, sandbox: SandboxInstance, settings: _Settings
    ) -> None:
        """Fail early, naming the variable, rather than let the CLI fail on its first request."""
        info = self.cli.info
        if ctx.variant.options.get("check_credentials") is False:
            return
        alternatives, about = info.credentials, ""
        if self.cli.sign_in is not None:
            found = await self.cli.sign_in(ctx.model, sandbox.home, sandbox.workspace, sandbox)
            if found.signed_in:
                return
            alternatives, about = found.alternatives, found.about
        elif await _any_file(sandbox, [sandbox.home / f for f in info.credential_files]):
            return
        if not alternatives:
            return
        env = sandbox.environment(settings.env)
        if any(all(env.get(name) for name in names) for names in alternatives):
            return
        unpassed = [
            n for names in alternatives for n in names if len(names) == 1 and os.environ.get(n)
        ]
        if unpassed:
            raise HarnessStartError(
                f"{info.title} has no credential{about} in the trial: {unpassed[0]} is set here but "
                f"not passed to it; declare it with Variant(secrets=[{unpassed[0]!r}]) or "
                f"--secret {unpassed[0]}"
            )
        first = alternatives[0][0]
        others = ", ".join(" + ".join(names) for names in alternatives[1:])
        raise HarnessStartError(
            f"{info.title} has no credential{about}: set {first}"
            + (f" (or {others})" if others else "")
            + f" in anpord's environment and declare it with Variant(secrets=[{first!r}]), or pass "
            "options={'check_credentials': False}"
        )


async def _inside_lookup(sandbox: SandboxInstance, program: str, env: Mapping[str, str]) -> str | None:
    """Where ``program`` (a name on the trial's PATH, or a path) is inside the sandbox, as its
    programs would find it; None when they would not."""
    from ...sandboxes._protocol import SandboxError

    try:
        done = await sandbox.exec(f"command -v {shlex.quote(program)}", timeout=60, env=dict(env))
    except SandboxError as exc:
        raise HarnessStartError(f"could not look for {program} in the sandbox: {exc}") from None
    found = done.stdout.strip().splitlines()
    return found[-1] if done.ok and found and found[-1].startswith("/") else None


async def _any_file(sandbox: SandboxInstance, paths: Sequence[Path]) -> bool:
    """Whether one of ``paths`` is a file the sandbox's programs can read (a stored sign-in)."""
    for path in paths:
        if sandbox.host_paths:
            if path.is_file():
                return True
            continue
        try:
            await sandbox.read_file(path)
            return True
        except OSError:
            continue
    return False


def _need_sandbox(ctx: HarnessContext, name: str) -> SandboxInstance:
    if ctx.sandbox is None:
        raise HarnessStartError(f"the {name} harness needs a sandbox for the trial")
    return ctx.sandbox


async def _install(
    ctx: HarnessContext, sandbox: SandboxInstance, profile: Profile, step: str, env: dict[str, str]
) -> dict[str, Any]:
    from ...sandboxes._protocol import SandboxError

    ctx.log(f"[profile {profile.name}] $ {step}")
    try:
        done = await sandbox.exec(step, timeout=profile.install_timeout, env=env)
    except SandboxError as exc:
        raise HarnessStartError(
            f"profile {profile.name!r}: its install step could not run: {exc}"
        ) from None
    lines = done.output.splitlines()
    for line in lines[-_TAIL_LINES * 10 :]:
        ctx.log(f"[profile {profile.name}] {line}")
    record = {"command": step, "exit_code": done.exit_code, "duration": round(done.duration, 3)}
    if done.timed_out:
        raise HarnessStartError(
            f"profile {profile.name!r}: its install step timed out after {profile.install_timeout:g}s: {step}"
        )
    if done.exit_code != 0:
        tail = " | ".join(line.strip() for line in lines[-3:] if line.strip()) or "no output"
        raise HarnessStartError(
            f"profile {profile.name!r}: its install step exited {done.exit_code}: {step}: {_clip(tail, 300)}"
        )
    return record


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shown(argv: Sequence[str]) -> str:
    return shlex.join(a if len(a) <= _SHOWN_ARG else f"<{len(a)} characters>" for a in argv)


class CodingSession(ProgramSession):
    """One conversation: each turn a new process, continuing the CLI's own session."""

    def __init__(
        self,
        harness: CodingHarness,
        ctx: HarnessContext,
        sandbox: SandboxInstance,
        session_id: str,
        settings: _Settings,
        trial: _TrialState,
    ):
        super().__init__(sandbox, session_id)
        self.harness = harness
        self.cli = harness.cli
        self.ctx = ctx
        self.settings = settings
        self.trial = trial
        self.resume: str | None = None  # the CLI's own session id, from the last turn's stream
        self.thread_usage: ThreadUsage | None = None  # codex: the thread's totals so far
        self.turns = 0

    # -- one turn -----------------------------------------------------------------------------

    async def _turn(self, request: TurnRequest, emit: Emit) -> TurnOutcome:
        if request.input is None:
            return TurnOutcome(
                "failed",
                error=f"{self.cli.info.title} runs unattended and asks for no input: nothing to answer",
            )
        self._announce(emit)
        self.turns += 1
        if self.turns > 1 and self.resume is None:
            emit(
                Event(
                    "log",
                    {
                        "message": f"[{self.cli.name} reported no session id on the previous turn: "
                        "this turn starts a new session]",
                        "stream": "anpord",
                    },
                )
            )
        prompt_file = self.dir / "prompt.txt"
        prompt = message_text(request.input).encode("utf-8")
        await self.sandbox.write_file(prompt_file, prompt)
        invocation = self.cli.command(
            prompt_file=str(prompt_file),
            model=self.ctx.model,
            system_prompt=self.settings.system_prompt,
            resume=self.resume,
            executable=self.settings.executable,
        )
        await self._write_files(invocation.files)
        env = self.sandbox.environment({**invocation.env, **self.settings.env})
        args: tuple[str, ...] = self.settings.args
        proxy = self.ctx.extra.get("model_proxy")
        if proxy is not None:
            from ...proxy._clis import for_cli

            # Wins over a profile's or the variant's endpoint: that is what the proxy forwards to.
            own = (await self.cli.own_endpoints(self.sandbox.home, self.sandbox.workspace, self.sandbox)
                   if self.cli.own_endpoints else set())
            added, more = await for_cli(self.cli.name, proxy, env, self.sandbox.home, self.sandbox, own)
            env, args = {**env, **added}, (*more, *args)
        at = _ARGS_AT.get(self.cli.name, 1)
        argv = [*invocation.argv[:at], *args, *invocation.argv[at:]]
        if self.cli.credential_env is not None:
            env = {**env, **self.cli.credential_env(env)}
        parser = self._parser()
        chatter = GEMINI_DEBUG_LINE.match if self.cli.name == "gemini" else None
        program = self._program = ProgramRun(self.sandbox, parser, emit, self.ctx.log, chatter)  # type: ignore[arg-type]
        from ...sandboxes._protocol import SandboxError

        try:
            done = await program.run(
                argv,
                env,
                self.sandbox.workspace,
                stdin=await self._stdin(invocation.stdin, str(prompt_file), prompt),
                on_spawn=self._on_spawn,
                expected_kill=lambda: self._cancel_requested or self._closing,
            )
        except SandboxError as exc:
            raise HarnessStartError(f"{self.cli.name} could not be started: {exc}") from None
        finally:
            self._program = None
        if done.setup_failure:
            raise HarnessStartError(self._setup_failure(done.setup_failure))
        if done.exit_code in (126, 127) and done.stdout_lines == 0 and not self._cancel_requested:
            cause = stderr_reason(done.stderr_head, done.stderr_tail)
            raise HarnessStartError(
                f"{self.settings.executable} could not start (exit {done.exit_code})"
                + (f": {cause}" if cause else "")
            )
        emit(
            Event(
                PROCESS_EXITED,
                {
                    "command": _shown(argv),
                    "exit_code": done.exit_code,
                    "duration": round(done.duration, 3),
                },
            )
        )
        if self._cancel_requested:
            return TurnOutcome("cancelled")
        end = parser.finish(done.exit_code if done.exit_code >= 0 else None)
        for event in end.trailing:
            emit(event)
        self.resume = end.resume or self.resume
        if isinstance(parser, CodexStreamParser):
            self.thread_usage = parser.thread_usage
        if end.status == "completed":
            return TurnOutcome("completed", message=end.message, data=end.data)
        from ...results._model import ErrorInfo

        error = end.error or f"{self.cli.name} ended its turn {end.status}"
        cause = stderr_reason(done.stderr_head, done.stderr_tail)
        if done.exit_code != 0 and cause and cause not in error:
            error += f" (stderr: {cause})"
        return TurnOutcome(
            "failed", message=end.message, error=error, failure=ErrorInfo("agent", error)
        )

    def _announce(self, emit: Emit) -> None:
        """Once per trial, before the first turn: which profile (and contents) it ran with."""
        state = self.trial
        if state.announced or state.profile is None:
            return
        state.announced = True
        emit(Event(PROFILE_APPLIED, {**state.profile.summary(), "install": list(state.installs)}))

    async def _write_files(self, files: Sequence[Any]) -> None:
        """The CLI's instruction files (a system prompt it reads from HOME), once per trial; a
        file the profile put there already keeps its text, with the system prompt after it.
        Through the sandbox's file protocol: they are where the CLI sees them."""
        for f in files:
            key = (f.root, f.path)
            if key in self.trial.written:
                continue
            self.trial.written.add(key)
            base = self.sandbox.home if f.root == "home" else self.sandbox.workspace
            target = base / f.path
            try:
                before = (await self.sandbox.read_file(target)).decode("utf-8")
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                before = ""
            text = f"{before.rstrip()}\n\n{f.text}" if before.strip() else f.text
            await self.sandbox.write_file(target, text.encode("utf-8"))

    async def _stdin(self, path: str | None, prompt_file: str, prompt: bytes) -> Path | bytes | None:
        """What the CLI reads on stdin: the file ``path``, opened on the host where the
        sandbox's files are host files, else its bytes (the prompt just written, or read back)."""
        if path is None:
            return None
        if self.sandbox.host_paths:
            return Path(path)
        return prompt if path == prompt_file else await self.sandbox.read_file(path)

    def _parser(self) -> Any:
        workspace = str(self.sandbox.workspace)
        if self.cli.name == "codex":
            return CodexStreamParser(workspace=workspace, thread_usage_before=self.thread_usage)
        return self.cli.parser(workspace=workspace)

    def _setup_failure(self, failure: str) -> str:
        if "execvp" in failure or "No such file" in failure:
            return (
                f"{failure}: {self.settings.executable} must be visible inside the sandbox; mount "
                "the folder that holds it (and its interpreter) with Variant(mounts=[...])"
            )
        return failure

    async def _on_spawn(self, proc: asyncio.subprocess.Process) -> None:
        if self._cancel_requested:
            await self.sandbox.kill_tree(proc)
