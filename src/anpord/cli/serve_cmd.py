"""``anpord serve SPEC``: serve a Python agent over the HTTP agent protocol.

SPEC is ``package.module:attr`` (or ``python:package.module:attr``), imported with the current
folder and the project folder (the evals root's parent, when there is one) on ``sys.path``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ._args import Parser, port_number, positive_float

__all__ = ["DEFAULT_PORT", "TOKEN_ENV", "build_parser", "main"]

DEFAULT_PORT = 8787
TOKEN_ENV = "ANPORD_SERVE_TOKEN"
DESCRIPTION = """Serve a Python agent over anpord's HTTP agent protocol, so `anpord eval --harness
http://HOST:PORT` (or any client of the protocol) can drive it. SPEC is package.module:attr, as in
a python: harness spec. Prints the server's URL; Ctrl-C or SIGTERM stops it."""


def build_parser() -> Parser:
    p = Parser(prog="anpord serve", description=DESCRIPTION)
    p.add_argument("spec", metavar="SPEC", help="the agent: package.module:attr")
    p.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        metavar="N",
        help=f"port to listen on (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="HOST",
        help="address to listen on (default 127.0.0.1: this machine only)",
    )
    p.add_argument(
        "--idle-timeout",
        type=positive_float,
        default=3600.0,
        metavar="S",
        help="close a session after S seconds without a turn (default 3600)",
    )
    p.add_argument(
        "--token",
        default=None,
        metavar="TOKEN",
        help=f"answer only requests with 'Authorization: Bearer TOKEN' (default ${TOKEN_ENV}; "
        "the http:// harness sends $ANPORD_HTTP_TOKEN)",
    )
    return p


def _token(given: str | None) -> str | None:
    """The bearer token: --token, else $ANPORD_SERVE_TOKEN; empty means none. ValueError when it
    could not travel in a header."""
    token = given if given is not None else os.environ.get(TOKEN_ENV, "")
    if not token:
        return None
    if not all(33 <= ord(c) <= 126 for c in token):
        source = "--token" if given is not None else f"${TOKEN_ENV}"
        raise ValueError(f"{source} must be printable ASCII without spaces")
    return token


def _project_folder() -> Path | None:
    from .._errors import UsageError
    from .._project import find_root

    try:
        return find_root([]).parent
    except UsageError:
        return None


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        token = _token(args.token)
    except ValueError as exc:
        print(f"anpord serve: {exc}", file=sys.stderr)
        return 2
    from ..harnesses import HarnessSpecError
    from ..harnesses.python import PythonHarness, load_agent

    target = args.spec.removeprefix("python:")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        agent = load_agent(target, _project_folder())
    except HarnessSpecError as exc:
        print(f"anpord serve: {exc}", file=sys.stderr)
        return 2
    try:
        import aiohttp  # noqa: F401 - checked before binding: a clear line, not a traceback
    except ImportError:
        print("anpord serve: needs aiohttp (pip install aiohttp)", file=sys.stderr)
        return 2
    from ..serve import bind, serve

    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        print(f"anpord serve: cannot listen on {args.host}:{args.port}: {reason}", file=sys.stderr)
        return 2
    from .._net import is_loopback

    if token is None and not is_loopback(sock):
        print(f"anpord serve: warning: listening on {args.host} without a token: anyone who can reach "
              f"it can run the agent (set ${TOKEN_ENV} or --token)", file=sys.stderr)
    return serve(
        PythonHarness(f"python:{target}", agent), sock, name=target, idle_timeout=args.idle_timeout,
        token=token,
    )
