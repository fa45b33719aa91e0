"""The ports a trial's services listen on (``traces/_listen.loopback_listener``): taken in turn
from the ephemeral range rather than by binding port 0, which makes the kernel step around every
TIME_WAIT a run's earlier trials left, and so grew to milliseconds a bind after some thousands of
trials; a port whose only connections are in TIME_WAIT listens again; a port in use is skipped."""

from __future__ import annotations

import socket

from anpord.traces._listen import _port_range, loopback_listener


def _time_wait_on_port() -> int:
    """A port whose listener has closed, with its side of a closed connection in TIME_WAIT (the
    side that closes first keeps it, as a mock answering ``Connection: close`` does)."""
    listener = loopback_listener()
    port = listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    listener.setblocking(True)
    served, _ = listener.accept()
    served.close()  # the server's side first: TIME_WAIT is on 127.0.0.1:port
    client.recv(1)
    client.close()
    listener.close()
    return port


def test_free_ports_come_in_turn_from_the_ephemeral_range_and_listen() -> None:
    low, high = _port_range()
    first, second = loopback_listener(), loopback_listener()
    try:
        a, b = first.getsockname()[1], second.getsockname()[1]
        assert low <= a <= high and low <= b <= high
        assert b != a and (b - a) % (high - low + 1) < 64  # the next free one after it
        with socket.create_connection(("127.0.0.1", b), timeout=5):
            pass  # it listens
    finally:
        first.close()
        second.close()


def test_a_port_left_in_time_wait_listens_again_and_one_in_use_is_skipped() -> None:
    port = _time_wait_on_port()
    again = loopback_listener(port)  # SO_REUSEADDR: TIME_WAIT does not hold the port
    try:
        assert again.getsockname()[1] == port
        taken = [loopback_listener() for _ in range(3)]
        assert len({s.getsockname()[1] for s in taken} | {port}) == 4
    finally:
        again.close()
        for s in taken:
            s.close()
