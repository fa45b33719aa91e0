"""Listening sockets for anpord's own servers (``anpord serve``, ``anpord view``)."""

from __future__ import annotations

import ipaddress
import socket

__all__ = ["LOOPBACK_NAMES", "allowed_hosts", "bind", "is_loopback", "url_of"]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (port 0: a free one), not inherited by children.
    Raises OSError."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock


def url_of(sock: socket.socket) -> str:
    """``http://host:port`` of a bound socket (an IPv6 host in brackets)."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def is_loopback(sock: socket.socket) -> bool:
    try:
        return ipaddress.ip_address(sock.getsockname()[0]).is_loopback
    except ValueError:
        return False


def allowed_hosts(sock: socket.socket) -> frozenset[str] | None:
    """The ``Host`` headers a server on a loopback address answers (a page on another site that
    rebinds its own name to 127.0.0.1 sends that name): its own address and ``localhost``, with
    its port. None (any) when it listens on another address: then whoever started it chose to
    be reachable by other names."""
    if not is_loopback(sock):
        return None
    port = sock.getsockname()[1]
    own = url_of(sock).removeprefix("http://").rsplit(":", 1)[0]
    return frozenset(f"{name}:{port}" for name in {own, *LOOPBACK_NAMES})
