"""The ``docker`` sandbox: one container per trial, through a Docker-compatible CLI (see
``_container`` for which one and its settings).

A trial's container runs its ``image`` (or the image built from its ``dockerfile``) with ``sleep
infinity`` as PID 1, and every command of the trial — each turn of the agent, ``context.exec``,
shell verifiers — is a ``<cli> exec`` into it. What a program there sees:

- the image's filesystem, read-only, with a private ``/tmp`` (a tmpfs capped like the trial's
  folder), and the trial's workspace, HOME (both writable) and harness state folder (read-only)
  bound at the same paths as on the host, so paths in prompts, environments and checks are the
  same in every sandbox; the variant's ``mounts`` read-only;
- no network (``--network none``: loopback only) unless ``Variant(network=True)``; a trial's
  loopback services (trace receiver, mocks) are reachable at the same ``127.0.0.1:<port>`` as
  elsewhere, through a listener the runner opens inside the container's network namespace;
- uid 0 of the container without any capability (``--cap-drop ALL``, ``no-new-privileges``),
  so the files it writes in the workspace are the runner's;
- the caps: ``memory`` (no swap on top), ``pids`` and ``cpus`` on the container, the trial's
  folder size cap on everything writable. A breach of the memory or pids cap kills the trial's
  processes and fails the trial naming the cap, as under bwrap.

Each command runs under a small bash wrapper that marks it (``ANPORD_SANDBOX_CMD``) and, once the
command's main process exits, kills what it left running (what a PID namespace does under bwrap);
``kill_tree`` kills a command's marked processes from inside the container.

With ``ANPORD_CONTAINER_COPY=1`` nothing of the host is bound in (for engines whose bind mounts
cannot be used, rootless ones say): the trial's workspace, HOME and state folder are under
``/anpord`` in the container, the workspace copied in (one tar through ``<cli> cp``) once it runs,
every file the runner reads or writes copied through the CLI, and the workspace copied out to its
host folder whenever the checks or a snapshot look at it (``workspace_view``). ``host_paths`` is
then false.

Requires a runner on the same machine as the container engine (the engine's cgroups and network
namespaces are reached through ``/proc``, and bind mounts unless copying); the image needs
``bash`` and ``sleep``.
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import io
import itertools
import os
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ._cgroup import TrialCgroup, _folder, _mounts, caps_options, memory_cap, pids_cap
from ._container import LABEL, OWNER_LABEL, ContainerCLI, ensure_image, find_cli, note_text
from ._instance import BaseInstance, open_instance
from ._owner import instance_prefix
from ._protocol import SandboxError, SandboxSpec
from ._size import size_cap

__all__ = ["CMD_ENV", "COPY_ENV", "DockerInstance", "DockerSandbox"]

CMD_ENV = "ANPORD_SANDBOX_CMD"
# ``ANPORD_CONTAINER_COPY=1``: no host folder is bound into a trial's container; the workspace is
# copied in when it starts and out before the checks read it (a rootless or remote engine's
# bind mounts may not be usable), and the trial's folders are under COPY_ROOT inside.
COPY_ENV = "ANPORD_CONTAINER_COPY"
COPY_ROOT = Path("/anpord")
CLONE_NEWNET = 0x40000000
# How long starting a container may take.
START_TIMEOUT = 300.0
# Variables the CLI itself reads: passed to the container by value on the command line, never
# through the CLI's own environment (everything else is, so that secrets stay off ``ps``).
_CLI_OWN = ("PATH", "HOME", "TMPDIR", "XDG_", "CONTAINER", "DOCKER_", "REGISTRY_", "BUILDAH_")
# Host variables that describe the host, not the image: the image's own values apply.
_HOST_ONLY = ("PATH", "SHELL")

# Kills every process of the container that carries the marker ``$1`` (but itself): bash only,
# the image may have nothing else. Repeated, as a process may fork while its parent is killed,
# until two passes in a row find none: a process in the middle of ``execve`` shows an empty
# environment for a moment, and one killed while it waits on the disk lives on until it wakes.
_KILL = r"""
k() { local i d p v hit clean=0; for ((i = 0; i < 40; i++)); do hit=; for d in /proc/[0-9]*; do p=${d#/proc/}
  [ "$p" = "$$" ] || [ "$p" = 1 ] && continue
  while IFS= read -r -d '' v; do [ "$v" = "ANPORD_SANDBOX_CMD=$1" ] && { kill -9 "$p"; hit=1; break; }
  done < "$d/environ"; done 2>/dev/null
  if [ -n "$hit" ]; then clean=0; else clean=$((clean + 1)); [ "$clean" -ge 2 ] && return; fi; done; }
"""
# Runs a command (its stdin kept), waits for its main process, kills what it left, keeps its code.
_WRAP = _KILL + r"""m=$1; shift; "$@" <&0 & c=$!; wait "$c"; rc=$?; k "$m"; exit "$rc"
"""


class DockerInstance(BaseInstance):
    """One trial's container (see the module's docstring)."""

    def __init__(
        self,
        root: Path,
        spec: SandboxSpec,
        cli: ContainerCLI,
        image: str,
        mounts: Sequence[Path],
        memory: int | None,
        pids: int | None,
        cpus: float | None,
        copy: bool = False,
    ):
        # Copying: the trial's folders are in the container only (see ``_inside``), filled
        # and read through the CLI; else they are the host's, bound in.
        self.copy = copy
        self.host_paths = not copy
        self.cli, self.image, self.mounts = cli, image, list(mounts)
        self.memory, self.pids, self.cpus = memory, pids, cpus
        self.container: str | None = None  # its name, once it runs
        self._note: Path | None = None
        self._init_pid: int | None = None  # the container's PID 1 as the host sees it
        self._cgroup: TrialCgroup | None = None
        self._commands = itertools.count(1)
        self._markers: dict[int, str] = {}  # by the pid of the CLI process that runs a command
        self._bridge_socks: list[socket.socket] = []
        self._bridge_tasks: list[asyncio.Task[None]] = []
        super().__init__(root, spec)
        for name in _HOST_ONLY:
            if name not in spec.variant.env:
                self._base_env.pop(name, None)

    # -- the container ------------------------------------------------------------------------

    def _tmpdir(self) -> str:
        return "/tmp"

    def _inside(self, host: Path) -> Path:
        return COPY_ROOT / host.name if self.copy else host

    @property
    def loopback_bridged(self) -> bool:  # type: ignore[override]
        return not self.spec.variant.network

    async def _ready(self) -> None:
        name = self.id
        cap = size_cap(self.spec.variant.options)
        args = [
            "run", "-d", "--name", name,
            "--label", f"{LABEL}=1", "--label", f"{OWNER_LABEL}={instance_prefix()}",
            "--network", "host" if self.spec.variant.network else "none",
            "--tmpfs", f"/tmp:rw,mode=1777{f',size={cap}' if cap else ''}",
            "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
            "--hostname", "sandbox", "--user", "0:0",
            # Copying, the workspace is made once the container runs: start in /.
            "--workdir", "/" if self.copy else str(self.workspace),
        ]  # fmt: skip
        if not self.copy:
            args.append("--read-only")
            if self.cli.podman:
                args.append("--read-only-tmpfs=false")  # only the /tmp above is writable
        elif self.cli.podman:
            # The trial's folders in a tmpfs held to the size cap, the image read-only beside
            # it (podman's cp writes into a tmpfs; docker's would write under it, so with docker
            # they are in the container's own writable layer).
            args += ["--read-only", "--read-only-tmpfs=false",
                     "--tmpfs", f"{COPY_ROOT}:rw,mode=755{f',size={cap}' if cap else ''}"]
        if self.memory is not None:
            args += ["--memory", str(self.memory), "--memory-swap", str(self.memory)]
        if self.pids is not None:
            args += ["--pids-limit", str(self.pids)]
        if self.cpus is not None:
            args += ["--cpus", str(self.cpus)]
        for m in self.mounts:
            args += ["-v", f"{m}:{m}:ro"]
        if not self.copy:
            args += [
                "-v", f"{self.workspace}:{self.workspace}",
                "-v", f"{self.home}:{self.home}",
                "-v", f"{self.state_dir}:{self.state_dir}:ro",
            ]  # fmt: skip
        args += ["--entrypoint", "sleep", self.image, "infinity"]
        # The note first: a runner killed while the container starts still has it swept.
        self._note = self.root.with_name(self.root.name + ".container")
        self._note.write_text(note_text(self.cli))
        _sweep_at_exit(self.cli)
        try:
            # Generous: an engine under load can take long.
            code, _, err = await self.cli.run(*args, timeout=START_TIMEOUT)
            if code != 0:
                raise SandboxError(
                    f"the {self.cli.name} sandbox could not start a container of {self.image}: "
                    f"{_said(err) or f'exit {code}'}"
                )
            self.container = name
            code, out, _ = await self.cli.run("inspect", "--format", "{{.State.Pid}}", name)
            if self.copy:
                await self._fill()
        except BaseException:
            # Failed, cancelled or hung, before or after the engine made the container: the
            # start's CLI process has ended (``run`` waits for it), so removing by name now
            # finds whatever it made. Shielded: a second cancellation must not stop the removal.
            self.container = None
            await asyncio.shield(self._remove())
            raise
        if code == 0 and out.strip().isdigit() and int(out) > 0:
            self._init_pid = int(out)
            self._cgroup = _container_cgroup(self._init_pid, self.memory, self.pids)
            if self._cgroup is not None:
                self._cgroup.watch(self._over_cgroup_cap)

    async def _fill(self) -> None:
        """Copying: make the trial's folders in the container, the workspace filled from its
        host folder (the case's source), in one copy; the host folder is emptied (it holds the
        workspace's views from now on)."""
        folders = (self.workspace, self.home, self.state_dir)
        stream = await asyncio.to_thread(_tar_of_folders, self.host_workspace, folders)
        await self._put(stream)
        await asyncio.to_thread(_empty, self.host_workspace)

    def _private_tmps(self) -> Callable[[], list[str]] | None:
        # The container's /tmp (a tmpfs of its own) counts toward the size cap, as under bwrap;
        # so do the trial's folders when they are a tmpfs in the container (copying, podman).
        def tmps() -> list[str]:
            if not self._init_pid:
                return []
            inside = [f"/proc/{self._init_pid}/root/tmp"]
            if self.copy and self.cli.podman:
                inside.append(f"/proc/{self._init_pid}/root{COPY_ROOT}")
            return inside

        return tmps

    async def _remove(self) -> None:
        if self._cgroup is not None:
            self._cgroup.stop()
        said = ""
        for attempt in range(3):  # an engine under load may refuse for a moment
            try:
                code, _, err = await self.cli.run("rm", "-f", "-t", "0", self.id, timeout=60)
            except (OSError, TimeoutError) as exc:
                code, err = -1, str(exc)
            said = _said(err)
            if code == 0 or "no such container" in said.lower() or "no container with" in said.lower():
                if self._note is not None:
                    self._note.unlink(missing_ok=True)
                return
            await asyncio.sleep(0.2 * (attempt + 1))
        # The note stays: the runner's watchdog (at its exit) or the next command's sweep removes it.
        print(f"anpord: could not remove container {self.id}: {said}", file=sys.stderr)

    # -- commands -----------------------------------------------------------------------------

    async def _start(
        self, argv: list[str], env: dict[str, str], cwd: Path, **kwargs: object
    ) -> asyncio.subprocess.Process:
        if self.container is None:
            raise SandboxError("the container is not running")
        marker = f"{self.id}.{next(self._commands)}"
        cli_env = dict(self.cli.env)
        args = ["exec"]
        if "stdin" in kwargs:
            args.append("-i")
        args += ["--workdir", str(cwd)]
        for key, value in {**env, CMD_ENV: marker}.items():
            if key.startswith(_CLI_OWN):
                args += ["-e", f"{key}={value}"]
            else:  # by name: the CLI passes on its own environment's value
                args += ["-e", key]
                cli_env[key] = value
        args += [self.container, "bash", "-c", _WRAP, "anpord", marker, *argv]
        proc = await asyncio.create_subprocess_exec(
            self.cli.path,
            *args,
            env=cli_env,
            stdin=kwargs.pop("stdin", asyncio.subprocess.DEVNULL),  # type: ignore[arg-type]
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        self._markers[proc.pid] = marker
        return proc

    def _killer(self, marker: str) -> list[str]:
        return [self.cli.path, "exec", self.id, "bash", "-c", _KILL + 'k "$1"', "anpord", marker]

    async def kill_tree(self, proc: asyncio.subprocess.Process) -> None:
        marker = self._markers.pop(proc.pid, None)
        if marker is not None and proc.returncode is None and self.container is not None:
            # Still running: its processes are inside the container, not below the CLI process.
            try:
                await self.cli.run(*self._killer(marker)[1:], timeout=30)
            except (OSError, TimeoutError):
                pass
        await super().kill_tree(proc)

    def kill_tree_now(self, proc: asyncio.subprocess.Process) -> None:
        marker = self._markers.pop(proc.pid, None)
        if marker is not None and proc.returncode is None and self.container is not None:
            try:  # not waited for: this runs in a cancellation handler
                subprocess.Popen(
                    self._killer(marker), env=self.cli.env, stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                )  # fmt: skip
            except OSError:
                pass
        super().kill_tree_now(proc)

    async def kill_all(self) -> None:
        if self._cgroup is not None:  # the kernel's list of the container's processes
            members = self._cgroup._members() - ({self._init_pid} if self._init_pid else set())
            for pid in members:
                try:
                    os.kill(pid, 9)
                except (ProcessLookupError, PermissionError):
                    pass
        elif self.container is not None and self._procs:
            try:
                await self.cli.run("exec", self.id, "bash", "-c", "kill -9 -1", timeout=30)
            except (OSError, TimeoutError):
                pass
        await super().kill_all()

    async def setup_failure(self, proc: asyncio.subprocess.Process, stderr: str = "") -> str | None:
        """The CLI's own error (the container is gone, no bash in the image): its exit code is
        125-127 and it said ``Error: ...`` last."""
        self._markers.pop(proc.pid, None)
        if proc.returncode not in (125, 126, 127):
            return None
        said = [line for line in stderr.splitlines() if line.startswith("Error: ")]
        if not said or self.limit_breached():
            return None
        return f"the {self.cli.name} sandbox could not start the program: {said[-1][7:]}"

    def limit_breached(self) -> bool:
        return bool(
            (self._guard is not None and self._guard.exceeded)
            or (self._cgroup is not None and self._cgroup.check() is not None)
        )

    # -- files: the bound folders directly, the rest of the container through the CLI ----------

    def _bound(self, path: str | Path) -> bool:
        if self.copy:
            return False
        target = self._host_path(path)
        return any(target.is_relative_to(d) for d in (self.workspace, self.home, self.state_dir))

    async def _cp(self, *args: str, input: bytes | None = None) -> bytes:
        code, out, err = await self.cli.run_bytes("cp", *args, input=input, timeout=600)
        if code != 0:
            said = _said(err)
            if "no such file" in said.lower() or "could not find" in said.lower():
                raise FileNotFoundError(said)
            raise SandboxError(f"{self.cli.name} cp {' '.join(args)}: {said or f'exit {code}'}")
        return out

    async def read_file(self, path: str | Path) -> bytes:
        if self._bound(path):
            return await super().read_file(path)
        stream = await self._cp(f"{self.id}:{self._host_path(path)}", "-")  # a tar of the file
        with tarfile.open(fileobj=io.BytesIO(stream)) as tar:
            member = next((m for m in tar.getmembers() if m.isfile()), None)
            extracted = tar.extractfile(member) if member is not None else None
            if extracted is None:
                raise IsADirectoryError(str(path))
            return extracted.read()

    async def _put(self, tar_stream: bytes) -> None:
        """Unpack a tar whose names are paths from the container's ``/``: the folders leading
        to each are made as needed, as root (every program there runs as root)."""
        await self._cp("-", f"{self.id}:/", input=tar_stream)

    async def write_file(self, path: str | Path, data: bytes) -> None:
        if self._bound(path):
            return await super().write_file(path, data)
        await self._put(_tar_of_data(self._host_path(path), data))

    async def copy_in(self, source: Path, dest: str | Path) -> None:
        if self._bound(dest):
            return await super().copy_in(source, dest)
        # One tar built here (a folder's content merges into dest, links stay links).
        await self._put(await asyncio.to_thread(_tar_of_tree, source, self._host_path(dest)))

    async def copy_out(self, source: str | Path, dest: Path) -> None:
        if self._bound(source):
            return await super().copy_out(source, dest)
        stream = await self._cp(f"{self.id}:{self._host_path(source)}", "-")
        await asyncio.to_thread(_untar_into, stream, dest)

    async def workspace_view(self) -> Path:
        """The workspace as it is now: the bound folder itself, or (copying) its copy out of the
        container into the trial's host folder, replacing what an earlier view left there."""
        if self.host_paths:
            return self.workspace
        stream = await self._cp(f"{self.id}:{self.workspace}/.", "-")
        await asyncio.to_thread(_replace_with_tar, self.host_workspace, stream)
        return self.host_workspace

    # -- loopback services --------------------------------------------------------------------

    def bridge_loopback(self, port: int, socket_path: Path) -> None:
        """Listen on ``127.0.0.1:port`` inside the container's network namespace (entered by this
        thread for the moment of making the socket) and forward each connection to the unix
        socket ``socket_path``: nothing is needed in the image."""
        if not self.loopback_bridged:
            return
        if self._init_pid is None:
            raise SandboxError("cannot reach the container's network to bridge a trial service")
        sock = _listen_in(self._init_pid, port)
        self._bridge_socks.append(sock)
        self._bridge_tasks.append(self._loop.create_task(_serve_bridge(sock, socket_path)))

    async def close(self) -> None:
        try:
            # Each bridge's server owns its socket and closes it as its task ends: wait for
            # that, so no closed descriptor stays registered with the event loop.
            for task in self._bridge_tasks:
                task.cancel()
            if self._bridge_tasks:
                await asyncio.wait(self._bridge_tasks)
            for sock in self._bridge_socks:
                sock.close()  # one whose task never started serving
            if not self._closed and self.container is not None:
                await self._remove()
        finally:
            await super().close()


_sweeps: set[tuple[int, str]] = set()  # (pid, CLI path): an end-of-process sweep is registered


def _sweep_at_exit(cli: ContainerCLI) -> None:
    """At this process's exit, remove every container that still carries its owner label: one
    whose removal a closing event loop cut short, or one a start made after it was given up on.
    Once per process and CLI; a killed runner's containers are its watchdog's (see _watchdog)."""
    key = (os.getpid(), cli.path)
    if key not in _sweeps:
        _sweeps.add(key)
        atexit.register(remove_owned, cli, instance_prefix(), os.getpid())


def remove_owned(cli: ContainerCLI, owner: str, pid: int | None = None) -> int:
    """Remove the containers labelled as ``owner``'s; how many there were. Never raises; in a
    forked child (``pid`` not its own) does nothing: the parent's containers are the parent's."""
    if pid is not None and pid != os.getpid():
        return 0
    try:
        mine = f"label={OWNER_LABEL}={owner}"
        found = cli.run_sync("ps", "-a", "-q", "--filter", mine, timeout=60)
        ids = found.stdout.split() if found.returncode == 0 else []
        if ids:
            cli.run_sync("rm", "-f", "-t", "0", *ids, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return 0
    return len(ids)


def _said(err: str) -> str:
    lines = [line.strip() for line in err.strip().splitlines() if line.strip()]
    return lines[-1].removeprefix("Error: ") if lines else ""


def _container_cgroup(pid: int, memory: int | None, pids: int | None) -> TrialCgroup | None:
    """The container's own memory and pids groups, as a ``TrialCgroup`` to watch for breaches
    and kill by (not to remove: the engine owns them). None when the host cannot see them."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    paths: dict[str, str] = {}
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                paths[controller] = parts[2]
    mounts = _mounts()
    if "memory" in mounts and "pids" in mounts and "memory" in paths and "pids" in paths:
        dirs = [_folder(mounts[c], paths[c]) for c in ("memory", "pids")]
        v2 = False
    elif "" in mounts and "" in paths:
        dirs, v2 = [_folder(mounts[""], paths[""])], True
    else:
        return None
    if not all(d.is_dir() for d in dirs):
        return None
    return TrialCgroup(dirs, v2, memory, pids)


_libc: list[Any] = []


def _setns(fd: int) -> None:
    if not _libc:
        _libc.append(ctypes.CDLL(None, use_errno=True))
    if _libc[0].setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _listen_in(pid: int, port: int) -> socket.socket:
    """A listening TCP socket on ``127.0.0.1:port`` in the network namespace of ``pid``."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
        try:
            _setns(target)
            try:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", port))
                sock.listen(128)
                sock.setblocking(False)
            finally:
                _setns(own)  # back at once: this thread runs the event loop
        finally:
            os.close(target)
    except OSError as exc:
        raise SandboxError(f"cannot bridge port {port} into the container: {exc.strerror or exc}") from None
    finally:
        os.close(own)
    return sock


def _connect_unix(path: Path) -> socket.socket:
    """A socket connected to the unix socket at ``path``, however long the path (through the
    folder's /proc/self/fd link: ``sun_path`` holds only 107 bytes)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            sock.connect(f"/proc/self/fd/{fd}/{path.name}")  # a local socket: at once
        finally:
            os.close(fd)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


async def _serve_bridge(sock: socket.socket, path: Path) -> None:
    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            try:
                writer.write_eof()
            except (OSError, RuntimeError):
                writer.close()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(sock=_connect_unix(path))
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
        finally:
            writer.close()
            up_writer.close()

    server = await asyncio.start_server(connection, sock=sock)
    try:
        await asyncio.Future()  # until cancelled by close()
    finally:
        server.close()


def copying() -> bool:
    """Whether trials copy their folders in and out instead of binding them (``COPY_ENV``)."""
    return os.environ.get(COPY_ENV, "").strip().lower() in ("1", "true", "yes", "on")


# -- tar streams for the CLI's cp (names are paths from the container's /) ---------------------


def _tar_bytes(fill: Callable[[tarfile.TarFile], None]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        fill(tar)
    return buffer.getvalue()


def _name(path: Path) -> str:
    return str(path).lstrip("/")


def _tar_of_data(target: Path, data: bytes) -> bytes:
    def fill(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(_name(target))
        info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
        tar.addfile(info, io.BytesIO(data))

    return _tar_bytes(fill)


def _tar_of_tree(source: Path, dest: Path) -> bytes:
    """``source`` (a file, or a folder whose content merges into ``dest``) as ``dest``."""
    return _tar_bytes(lambda tar: tar.add(str(source), arcname=_name(dest)))


def _tar_of_folders(content: Path, folders: Sequence[Path]) -> bytes:
    """The empty ``folders``, the first holding what the host folder ``content`` holds."""

    def fill(tar: tarfile.TarFile) -> None:
        for folder in folders:
            info = tarfile.TarInfo(_name(folder))
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
            tar.addfile(info)
        for entry in sorted(os.listdir(content)):
            tar.add(str(content / entry), arcname=f"{_name(folders[0])}/{entry}")

    return _tar_bytes(fill)


def _empty(folder: Path) -> None:
    from ..workspace import remove_tree

    for entry in os.listdir(folder):
        path = folder / entry
        if path.is_dir() and not path.is_symlink():
            remove_tree(path)
        else:
            path.unlink()


def _untar_into(stream: bytes, dest: Path) -> None:
    """A CLI's tar of one file or folder (named for it) unpacked as the host path ``dest``."""
    with tarfile.open(fileobj=io.BytesIO(stream)) as tar:
        members = tar.getmembers()
        if not members:
            return
        top = members[0].name.strip("/").split("/")[0]
        inner = []
        for m in members:
            name = m.name.strip("/")
            if name == top and not m.isdir():  # a single file
                m.name = dest.name
                dest.parent.mkdir(parents=True, exist_ok=True)
                tar.extract(m, dest.parent, filter="tar")
                return
            if name.startswith(top + "/"):
                m.name = name[len(top) + 1 :]
                inner.append(m)
        dest.mkdir(parents=True, exist_ok=True)
        tar.extractall(dest, members=inner, filter="tar")


def _replace_with_tar(folder: Path, stream: bytes) -> None:
    """Make the host ``folder`` hold what a CLI's tar of a folder's content (``path/.``) holds."""
    _empty(folder)
    with tarfile.open(fileobj=io.BytesIO(stream)) as tar:
        inner = []
        for m in tar.getmembers():
            name = m.name.strip("/")
            name = name[2:] if name.startswith("./") else name
            if name not in ("", "."):
                m.name = name
                inner.append(m)
        tar.extractall(folder, members=inner, filter="tar")


def _resolve_mounts(spec: SandboxSpec) -> list[Path]:
    from .bwrap import _resolve_mounts as resolve

    return resolve(spec)


class DockerSandbox:
    """Trials in containers. The CLI: ``$ANPORD_CONTAINER_CLI``, else docker, else podman."""

    name = "docker"

    def __init__(self, tmp_root: Path | None = None):
        self.tmp_root = tmp_root

    def check(self) -> None:
        """SandboxError now (before a run starts) when no container CLI can be used."""
        find_cli()

    async def open(self, spec: SandboxSpec) -> DockerInstance:
        cli = find_cli()
        variant = spec.variant
        options = caps_options(variant)
        try:
            memory, pids = memory_cap(options), pids_cap(options)
        except ValueError as exc:
            raise SandboxError(str(exc)) from None
        cpus = getattr(variant, "cpus", None)
        dockerfile = getattr(variant, "dockerfile", None)
        if dockerfile is not None:
            dockerfile = Path(str(dockerfile)).expanduser()
            if not dockerfile.is_absolute():
                dockerfile = spec.source_base / dockerfile
        image = await ensure_image(cli, getattr(variant, "image", None), dockerfile)
        inst = await open_instance(
            DockerInstance,
            spec,
            self.tmp_root,
            cli=cli,
            image=image,
            mounts=_resolve_mounts(spec),
            memory=memory,
            pids=pids,
            cpus=cpus,
            copy=copying(),
        )
        assert isinstance(inst, DockerInstance)
        return inst
