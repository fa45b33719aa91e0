"""Listening sockets for anpord's own servers (``anpord serve``, ``anpord view``)."""

from __future__ import annotations

import socket

__all__ = ["bind", "url_of"]


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
