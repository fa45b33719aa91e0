"""Loopback services for a sandbox whose network is closed.

A trial's services (its trace receiver, and the like) listen on the host's loopback. A program
in a network namespace of its own cannot reach that, so the service also listens on a unix
socket in the trial's folder (a file: the sandbox binds that folder, and unix sockets do not
care about network namespaces), and each command the sandbox starts goes through a small bridge:
it listens on ``127.0.0.1:<port>`` inside the command's namespace — the same port as on the host,
so the agent's environment is the same in every sandbox — forwards each connection to the unix
socket, then ``exec``\\ s the command. The bridge forks before the ``exec``: the command keeps
its pid, its exit code and its signals; the forwarding child dies with the command's PID
namespace.

The bridge is a standard-library Python script run with ``-I -S`` by an interpreter the sandbox
shows (the runner's own when it lives in a system folder, else the system's ``python3``; failing
both, the runner's, with its installation bound read-only).
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

__all__ = ["BRIDGE_SOURCE", "bridge_argv", "bind_unix", "interpreter"]

# Kept free of anything but the standard library, and of f-strings' newer forms: the system's
# python3 may be older than the runner's.
BRIDGE_SOURCE = r"""
import os, socket, sys, threading
args = sys.argv[1:]
sep = args.index("--")
pairs = [a.split("=", 1) for a in args[:sep]]
argv = args[sep + 1:]
listeners = []
for port, path in pairs:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(port)))
    s.listen(128)
    listeners.append((s, path))
parent = os.getpid()
if os.fork() != 0:
    for s, _ in listeners:
        s.close()
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        sys.stderr.write("anpord-bridge: failed to execute %s: %s\n" % (argv[0], exc.strerror))
        os._exit(127)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)  # never hold the command's pipes open after it ends

def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

def connect(path):
    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    folder, name = os.path.split(path)
    fd = os.open(folder, os.O_RDONLY)
    try:
        u.connect("/proc/self/fd/%d/%s" % (fd, name))  # any path length
    finally:
        os.close(fd)
    return u

def serve(listener, path):
    while True:
        conn, _ = listener.accept()
        try:
            upstream = connect(path)
        except OSError:
            conn.close()
            continue
        for a, b in ((conn, upstream), (upstream, conn)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()

for s, path in listeners:
    threading.Thread(target=serve, args=(s, path), daemon=True).start()
import time
while os.getppid() == parent:
    time.sleep(0.5)
"""

_SYSTEM = ("/usr/", "/bin/", "/lib")


def interpreter() -> tuple[str, str | None]:
    """The Python that runs the bridge inside the sandbox, and the folder to bind read-only for
    it (``None`` when the sandbox shows it already)."""
    own = os.path.realpath(sys.executable)
    if own.startswith(_SYSTEM):
        return own, None
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate, None
    return own, os.path.realpath(sys.base_prefix)


def bridge_argv(bridges: dict[int, Path], python: str) -> list[str]:
    """What goes before a command's argv so that each ``port`` inside reaches its unix socket."""
    return [python, "-I", "-S", "-c", BRIDGE_SOURCE, *(f"{p}={path}" for p, path in bridges.items()), "--"]


def bind_unix(path: Path) -> socket.socket:
    """A listening unix socket at ``path``, however long the path (bound through the folder's
    /proc/self/fd link: ``sun_path`` holds only 107 bytes). Connectable by the sandbox's user."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            sock.bind(f"/proc/self/fd/{fd}/{path.name}")
            # The folder guards who reaches it; its user may differ from the runner's.
            os.chmod(f"/proc/self/fd/{fd}/{path.name}", 0o666)
        finally:
            os.close(fd)
        sock.listen(128)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock
