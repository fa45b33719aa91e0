"""``anpord serve``: any Python agent over the HTTP agent protocol (docs/http-agents.md).

``serve(harness, sock, ...)`` runs the server; ``create_app`` (in ``anpord.serve._app``) builds
the aiohttp application alone, for embedding. aiohttp is imported only when a server starts.
"""

from __future__ import annotations

from ._server import ServeError, bind, serve, url_of

__all__ = ["ServeError", "bind", "serve", "url_of"]
