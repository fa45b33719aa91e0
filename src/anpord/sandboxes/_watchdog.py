"""What outlives a runner that is killed: its trials' processes and folders, until removed here.

The watchdog is a small process started once per runner (see ``_owner.start_watchdog``), in its
own session so a signal to the runner's process group does not reach it. Its stdin is a pipe
whose write end only the runner holds, and on which the runner names every folder it makes
instance folders in. When the pipe reaches end of file the runner is gone — it exited, or was
killed with SIGKILL and no ``finally`` ran — and the watchdog kills every process that carries
the runner's sandbox marker (with their descendants and the members of their sessions), then
removes the runner's instance folders, unmounting them first when they are size-capped tmpfs
mounts. After a normal exit there is nothing left to find: it looks once and exits.

Also the primitives ``sweep_stale`` uses for leftovers whose watchdog died too. Standard library
only: the watchdog runs this file by path (``python -I -S _watchdog.py``), without importing anpord,
so it starts in a few milliseconds and does not depend on how the runner found the package.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import time

MARKER_ENV = "ANPORD_SANDBOX_ID"  # the same name as _proc.MARKER_ENV
MNT_DETACH = 2
# How long the watchdog keeps looking for processes (a dying tree may still fork for a moment).
KILL_PATIENCE = 5.0


def boot_id() -> str:
    """A short id of this boot: a pid and start time recorded before a reboot name nobody now."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip().replace("-", "")[:8]
    except OSError:
        return "00000000"


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot), or ``None`` when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
        return int(raw[raw.rfind(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _processes() -> dict[int, tuple[int, int, int, bool]]:
    """Every process: pid -> (parent, process group, session, dead)."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
            fields = raw[raw.rfind(b")") + 2 :].split()
            dead = fields[0] == b"Z" and int(fields[17]) <= 1
            found[int(name)] = (int(fields[1]), int(fields[2]), int(fields[3]), dead)
        except (OSError, ValueError, IndexError):
            continue
    return found


def _carries(pid: int, needles: tuple[bytes, ...]) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:
        return False
    return any(item.startswith(needles) for item in env.split(b"\0"))


def kill_marked(prefixes: list[str], patience: float = KILL_PATIENCE) -> int:
    """SIGKILL every process whose marker starts with one of ``prefixes`` (instance-name
    prefixes), their descendants and the members of their sessions and process groups; look
    again until a few passes in a row find nothing alive. Returns how many it killed."""
    needles = tuple(f"{MARKER_ENV}={p}".encode() for p in prefixes)
    me = os.getpid()
    killed: set[int] = set()
    quiet = 0
    deadline = time.monotonic() + patience
    while quiet < 3 and time.monotonic() < deadline:
        procs = _processes()
        marked = {
            pid for pid, p in procs.items() if not p[3] and pid != me and _carries(pid, needles)
        }
        # A marked process leads its own session (every sandboxed command starts one), so the
        # sessions and groups it leads hold only what the trial started.
        leaders = {pid for pid in marked if procs[pid][2] == pid or procs[pid][1] == pid}
        children: dict[int, list[int]] = {}
        for pid, p in procs.items():
            children.setdefault(p[0], []).append(pid)
            if p[1] in leaders or p[2] in leaders:
                marked.add(pid)
        stack = list(marked)
        while stack:
            for child in children.get(stack.pop(), ()):
                if child not in marked:
                    marked.add(child)
                    stack.append(child)
        victims = [pid for pid in marked if pid != me and not procs[pid][3]]
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except OSError:
                pass
        quiet = 0 if victims else quiet + 1
        time.sleep(0.02)
    return len(killed)


def _unmount(path: str) -> None:
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.umount2(os.fsencode(path), MNT_DETACH)
    except (OSError, AttributeError):
        pass


def discard_folder(path: str) -> None:
    """Remove an instance folder (unmounting it first when it is a tmpfs of its own), even one
    whose agent made subfolders read-only. Never raises."""
    try:
        if os.path.ismount(path):
            _unmount(path)
        _remove(path)
    except OSError:
        pass


def _remove(path: str) -> None:
    # Descends by file descriptor and never follows a link: an agent may have left any shape.
    try:
        st = os.lstat(path)
    except OSError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        return
    _empty(None, path)
    os.rmdir(path)


def _empty(parent: int | None, name: str) -> None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except PermissionError:  # a folder the agent made unreadable (its processes are gone by now)
        os.chmod(name, 0o700, dir_fd=parent)
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    try:
        try:
            os.fchmod(fd, 0o700)  # a folder the agent made read-only
        except OSError:
            pass
        for entry in list(os.scandir(fd)):
            try:
                if entry.is_dir(follow_symlinks=False):
                    _empty(fd, entry.name)
                    os.rmdir(entry.name, dir_fd=fd)
                else:
                    os.unlink(entry.name, dir_fd=fd)
            except OSError:
                pass
    finally:
        os.close(fd)


def _noted_cli(note: str) -> tuple[str, dict[str, str]] | None:
    """The CLI and its settings a docker instance's note names (its lines: the CLI's path, then
    ``NAME=value`` settings the CLI needs); None when it cannot be read."""
    try:
        with open(note) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    for line in lines[1:]:
        key, sep, value = line.partition("=")
        if sep:
            env[key] = value
    return (lines[0].strip() if lines else "") or "podman", env


def remove_noted_container(note: str) -> None:
    """Remove the container a docker instance's note file names (the file is
    ``<instance folder>.container``), then the note. The note stays when the CLI could not be run."""
    import subprocess

    noted = _noted_cli(note)
    if noted is None:
        return
    cli, env = noted
    name = os.path.basename(note)[: -len(".container")]
    try:
        done = subprocess.run(
            [cli, "rm", "-f", "-t", "0", name],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return
    if done.returncode == 0 or b"no such container" in done.stderr.lower():
        try:
            os.unlink(note)
        except OSError:
            pass


def remove_labelled_containers(note: str, owner: str) -> None:
    """Remove every container labelled as ``owner``'s (``anpord.owner``), through the CLI a note
    names: what a runner that is gone still had, noted or not (one a start made late)."""
    import subprocess

    noted = _noted_cli(note)
    if noted is None:
        return
    cli, env = noted
    try:
        found = subprocess.run(
            # The label's name as ``_container.OWNER_LABEL`` (not imported: this runs lean).
            [cli, "ps", "-a", "-q", "--filter", f"label=anpord.owner={owner}"],
            env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        ids = found.stdout.split() if found.returncode == 0 else []
        if ids:
            subprocess.run(
                [cli, "rm", "-f", "-t", "0", *ids], env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120,
            )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        pass


def main(argv: list[str]) -> int:
    prefix = argv[1]
    os.chdir("/")  # hold no folder busy
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)  # only the runner's end of the pipe ends this
    roots: set[str] = set()
    for line in sys.stdin.buffer:  # blocks until the runner is gone
        try:
            roots.add(json.loads(line))
        except ValueError:
            continue
    kill_marked([prefix])
    for root in roots:
        try:
            names = os.listdir(root)
        except OSError:
            continue
        notes = [n for n in names if n.startswith(prefix) and n.endswith(".container")]
        if notes:  # the runner had containers there: all of them go, noted or not
            remove_labelled_containers(os.path.join(root, notes[0]), prefix)
        for name in names:
            if name in notes:
                remove_noted_container(os.path.join(root, name))
            elif name.startswith(prefix):
                discard_folder(os.path.join(root, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
