"""``anpord view``: a local, read-only web UI onto a project's runs (docs/view.md).

The pages ask a ``ViewData`` for what they show; ``FolderViewData`` answers from the run folders
(``.anpord/runs``), and a run store can answer the same protocol from its index.
``create_app(data, ...)`` builds the aiohttp application (aiohttp and Jinja2 are imported only
then); ``serve_view(data, sock, ...)`` runs it until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

from ._data import CellDelta, CellKey, CellRow, HistoryPoint, RunRow, RunView, TrialView, ViewData
from ._folders import FolderViewData, earliest_run_baselines
from ._history import StoreViewData
from ._server import bind, serve_view, url_of

__all__ = [
    "CellDelta",
    "CellKey",
    "CellRow",
    "FolderViewData",
    "StoreViewData",
    "HistoryPoint",
    "RunRow",
    "RunView",
    "TrialView",
    "ViewData",
    "bind",
    "create_app",
    "earliest_run_baselines",
    "serve_view",
    "url_of",
]


def __getattr__(name: str) -> object:
    if name == "create_app":
        from ._app import create_app

        return create_app
    raise AttributeError(f"module 'anpord.view' has no attribute {name!r}")
