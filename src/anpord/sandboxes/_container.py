"""The Docker-compatible command line the ``docker`` sandbox drives: which one, its settings,
images (built from a Dockerfile once, cached by content hash) and the leftovers of killed runners.

Which CLI: ``$ANPORD_CONTAINER_CLI`` when set (a name on PATH or a path), else ``docker`` when its
daemon answers, else ``podman``. Probed once per process; a CLI that is missing or whose daemon is
down is a ``SandboxError`` saying which and how to fix it.

podman settings: when the CLI is podman and the user has no ``containers.conf`` of their own
(``$CONTAINERS_CONF``, ``/etc/containers/containers.conf``, ``~/.config/containers/containers.conf``),
anpord points its own podman invocations at one it writes under its cache folder: explicit ulimits
(without them runc refuses to start a container as root on some hosts), ``runc`` when it is
installed (crun fails on hosts with cgroups in hybrid mode) and the ``cgroupfs`` manager when PID 1
is not systemd (podman's systemd manager cannot set the memory and pids caps there).

Leftovers: every container and image carries the label ``anpord.sandbox``; a container also names
its runner (``anpord.owner``: the instance prefix of ``_owner``) and has a note file beside the
instance folders, which ``sweep_stale`` reads to remove the containers of runners that are gone
(and, through the CLI a note names, every other container labelled as such a runner's).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ._protocol import SandboxError

__all__ = [
    "CLI_ENV",
    "LABEL",
    "OWNER_LABEL",
    "ContainerCLI",
    "ensure_image",
    "find_cli",
    "remove_containers",
]

CLI_ENV = "ANPORD_CONTAINER_CLI"
LABEL = "anpord.sandbox"
OWNER_LABEL = "anpord.owner"
# The podman settings anpord uses when the user has none (see the module's docstring).
PODMAN_CONF_NAME = "containers.conf"
# The CLI's settings a note keeps, so that a watchdog or a sweep can remove the container.
NOTE_SETTINGS = ("CONTAINERS_CONF", "CONTAINER_HOST", "DOCKER_HOST", "DOCKER_CONFIG", "HOME", "XDG_RUNTIME_DIR")
# How long a probe of the CLI, an image check or a build may take.
PROBE_TIMEOUT = 30.0
BUILD_TIMEOUT = 1800.0
# Lines of a failed build's output a void trial shows.
BUILD_TAIL = 12


@dataclass
class ContainerCLI:
    """A usable container CLI: its path, whether it is podman, and the environment to run it in."""

    path: str
    podman: bool
    env: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return "podman" if self.podman else "docker"

    def run_sync(self, *args: str, timeout: float = PROBE_TIMEOUT) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.path, *args],
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    async def run(self, *args: str, timeout: float = PROBE_TIMEOUT) -> tuple[int, str, str]:
        """Run the CLI to its end: (exit code, stdout, stderr). A CLI that hangs is killed."""
        code, out, err = await self.run_bytes(*args, timeout=timeout)
        return code, out.decode("utf-8", "replace"), err

    async def run_bytes(
        self, *args: str, input: bytes | None = None, timeout: float = PROBE_TIMEOUT
    ) -> tuple[int, bytes, str]:
        """``run`` with ``input`` on its stdin and its stdout as bytes (a tar stream, say).

        Its output is read from pipes of its own, not to their end but to the CLI's exit: all it
        wrote is in them by then, and a container's monitor that ``run -d`` starts may hold them
        open for the container's life (podman's conmon does under uvloop), so that their end
        never comes."""
        loop = asyncio.get_running_loop()
        out, err = _Output(loop), _Output(loop)
        try:
            proc = await asyncio.create_subprocess_exec(
                self.path,
                *args,
                env=self.env,
                stdin=asyncio.subprocess.DEVNULL if input is None else asyncio.subprocess.PIPE,
                stdout=out.write_end,
                stderr=err.write_end,
            )
        except BaseException:
            out.close()
            err.close()
            raise
        out.spawned()
        err.spawned()
        try:
            await asyncio.wait_for(_feed_and_wait(proc, input), timeout)
        except BaseException:
            if proc.returncode is None:
                proc.kill()
                # Wait for it even through another cancellation: a caller that removes what a
                # killed CLI may have made (a container) must look only once the CLI is gone.
                while proc.returncode is None:
                    try:
                        await asyncio.shield(proc.wait())
                    except asyncio.CancelledError:
                        continue
            raise
        finally:
            stdout, stderr = out.close(), err.close()
        assert proc.returncode is not None
        return proc.returncode, stdout, stderr.decode("utf-8", "replace")


class _Output:
    """A pipe for one output of a CLI: read by the loop as it comes, and at the end (``close``)
    whatever is left in it, without waiting for its writers to close it."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.read_end, self.write_end = os.pipe()
        os.set_blocking(self.read_end, False)
        self.parts: list[bytes] = []
        self._watched = False

    def spawned(self) -> None:
        """The CLI holds the write end now: ours is closed, and the pipe is read as it fills."""
        os.close(self.write_end)
        self.write_end = -1
        self.loop.add_reader(self.read_end, self._read)
        self._watched = True

    def _read(self) -> bool:
        try:
            chunk = os.read(self.read_end, 1 << 16)
        except BlockingIOError:
            return False
        if not chunk:
            self.loop.remove_reader(self.read_end)
            self._watched = False
            return False
        self.parts.append(chunk)
        return True

    def close(self) -> bytes:
        """What the CLI wrote (all of it, once it has exited); the pipe closed."""
        if self._watched:
            self.loop.remove_reader(self.read_end)
            self._watched = False
        if self.read_end >= 0:
            try:
                while self._read():
                    pass
            except OSError:
                pass
            os.close(self.read_end)
            self.read_end = -1
        if self.write_end >= 0:
            os.close(self.write_end)
            self.write_end = -1
        return b"".join(self.parts)


async def _feed_and_wait(proc: asyncio.subprocess.Process, data: bytes | None) -> None:
    """Write ``data`` to the process's stdin and close it, then wait for the process to exit."""
    if data is not None and proc.stdin is not None:
        try:
            proc.stdin.write(data)
            await proc.stdin.drain()
            proc.stdin.close()
        except (BrokenPipeError, ConnectionResetError):  # it exited without reading it all
            pass
    await proc.wait()


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


# -- which CLI ------------------------------------------------------------------------------------

_found: list[ContainerCLI | str] = []  # the probe's result, once


def find_cli() -> ContainerCLI:
    """The container CLI to use (probed once per process). SandboxError saying which is missing
    or down, and how to fix it."""
    if not _found:
        _found.append(_probe())
    result = _found[0]
    if isinstance(result, str):
        raise SandboxError(result)
    return result


def _probe() -> ContainerCLI | str:
    chosen = os.environ.get(CLI_ENV, "").strip()
    if chosen:
        path = shutil.which(chosen)
        if path is None:
            return (
                f"{CLI_ENV}={chosen}: no such program; install it or set {CLI_ENV} to docker or podman"
            )
        return _answers(_make(path))
    tried = []
    for name in ("docker", "podman"):
        path = shutil.which(name)
        if path is None:
            continue
        cli = _make(path)
        result = _answers(cli)
        if isinstance(result, ContainerCLI):
            return result
        tried.append(result)
    if not tried:
        return (
            "the docker sandbox needs a container CLI: neither docker nor podman is installed "
            "(apt-get install podman runc, or install Docker)"
        )
    return "; ".join(tried)


def _make(path: str) -> ContainerCLI:
    podman = "podman" in os.path.basename(os.path.realpath(path))
    env = dict(os.environ)
    if podman and not _has_podman_conf():
        env["CONTAINERS_CONF"] = str(_write_podman_conf())
    return ContainerCLI(path, podman, env)


def _answers(cli: ContainerCLI) -> ContainerCLI | str:
    """``cli`` when its engine answers, else why not (one line with the fix)."""
    # ``version`` asks the daemon (docker) or the local engine (podman); ``info`` would be slower.
    try:
        done = cli.run_sync("version", "--format", "{{.Server.Version}}")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{cli.path} does not answer: {exc}"
    if done.returncode == 0 and done.stdout.strip():
        return cli
    said = _last_line(done.stderr) or f"exit {done.returncode}"
    if cli.podman:
        return f"podman ({cli.path}) cannot run containers: {said}"
    return (
        f"the Docker daemon is not reachable through {cli.path}: {said}; start it "
        f"(systemctl start docker) or set {CLI_ENV}=podman"
    )


def _has_podman_conf() -> bool:
    if os.environ.get("CONTAINERS_CONF"):
        return True
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return any(
        os.path.isfile(p)
        for p in ("/etc/containers/containers.conf", os.path.join(xdg, "containers/containers.conf"))
    )


def podman_conf_text() -> str:
    """The containers.conf anpord uses for podman when the user has none."""
    engine = []
    if shutil.which("runc"):
        engine.append('runtime = "runc"')
    if not os.path.isdir("/run/systemd/system"):  # PID 1 is not systemd
        engine.append('cgroup_manager = "cgroupfs"')
        engine.append('events_logger = "file"')
    return (
        "# Written by anpord for its own podman invocations (you have no containers.conf).\n"
        "[containers]\n"
        'default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n'
        "[engine]\n" + "".join(line + "\n" for line in engine)
    )


def _write_podman_conf() -> Path:
    from ..workspace._git import cache_root

    path = cache_root() / PODMAN_CONF_NAME
    text = podman_conf_text()
    try:
        if not path.is_file() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            tmp.write_text(text)
            os.replace(tmp, path)
    except OSError as exc:
        raise SandboxError(f"cannot write podman settings to {path}: {exc}") from None
    return path


# -- images ---------------------------------------------------------------------------------------

_images: dict[str, asyncio.Future[str]] = {}  # image or Dockerfile key -> the image to run


async def ensure_image(cli: ContainerCLI, image: str | None, dockerfile: Path | None) -> str:
    """The image a trial runs: ``image`` when it exists locally (else pulled), or the image built
    from ``dockerfile`` (its folder is the build context), tagged by the hash of the Dockerfile and
    built once per content, across runs. SandboxError with the build's last lines on failure."""
    if dockerfile is not None:
        try:
            text = dockerfile.read_bytes()
        except OSError as exc:
            raise SandboxError(f"dockerfile {dockerfile}: {exc.strerror or exc}") from None
        digest = hashlib.sha256(text + b"\0" + str(dockerfile.parent).encode()).hexdigest()[:16]
        key, work = f"build:{digest}", lambda: _build(cli, dockerfile, f"localhost/anpord-build:{digest}")
    elif image:
        key, work = f"image:{image}", lambda: _present(cli, image)
    else:
        raise SandboxError("sandbox='docker' needs Variant(image=...) or Variant(dockerfile=...)")
    future = _images.get(key)
    if future is None or (future.done() and future.exception() is not None):
        future = _images[key] = asyncio.ensure_future(work())  # one build however many trials
    return await asyncio.shield(future)


async def _exists(cli: ContainerCLI, image: str) -> bool:
    code, _, _ = await cli.run("image", "inspect", "--format", "{{.Id}}", image)
    return code == 0


async def _present(cli: ContainerCLI, image: str) -> str:
    if await _exists(cli, image):
        return image
    code, out, err = await cli.run("pull", "-q", image, timeout=BUILD_TIMEOUT)
    if code != 0:
        raise SandboxError(
            f"image {image!r} is not on this machine and could not be pulled: "
            f"{_last_line(err) or _last_line(out) or f'exit {code}'}"
        )
    return image


async def _build(cli: ContainerCLI, dockerfile: Path, tag: str) -> str:
    if await _exists(cli, tag):
        return tag
    code, out, err = await cli.run(
        "build", "-f", str(dockerfile), "-t", tag, "--label", f"{LABEL}=1", str(dockerfile.parent),
        timeout=BUILD_TIMEOUT,
    )
    if code != 0:
        lines = [line for line in (out + err).splitlines() if line.strip()][-BUILD_TAIL:]
        raise SandboxError(f"building {dockerfile} failed (exit {code}):\n" + "\n".join(lines))
    return tag


# -- leftovers ------------------------------------------------------------------------------------


def remove_containers(notes: list[str]) -> None:
    """Remove the containers named by these note files (see ``_watchdog``), then the notes. For
    ``sweep_stale``: never raises."""
    from ._watchdog import remove_labelled_containers, remove_noted_container

    owners: dict[str, str] = {}  # a runner's prefix (a note's name but its random end) -> a note
    for note in notes:
        owners.setdefault(os.path.basename(note).rsplit("-", 1)[0] + "-", note)
    for owner, note in owners.items():  # what they made but no note names (a late start)
        remove_labelled_containers(note, owner)
    for note in notes:
        remove_noted_container(note)


def note_text(cli: ContainerCLI) -> str:
    """What a docker instance's note holds: how to run its CLI without anpord."""
    settings = [f"{k}={cli.env[k]}" for k in NOTE_SETTINGS if k in cli.env]
    return "\n".join([cli.path, *settings]) + "\n"
