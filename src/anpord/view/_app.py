"""The view's web application: routes, templates, and the headers every response carries.

Read-only by construction: only GET (and the HEAD aiohttp answers with it) is routed, so any other
method is 405. Every response, error pages and aiohttp's own included, carries a strict
Content-Security-Policy (scripts and styles only from this server's ``/static/``; no inline script
or style at all), ``X-Content-Type-Options: nosniff``, no framing and no referrer. Templates escape
every value they insert (Jinja2 autoescaping); JavaScript inserts text with ``textContent`` only.

A request never becomes a file path: run ids are looked up among the listed runs (``ViewData``),
static files among the few the package ships, read once at start-up.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from . import _format
from ._compare import compare_cell_page, compare_page
from ._data import ViewData
from ._pages import FILTERS, GridQuery, cell_page, default_variant, grid_page, runs_page, trial_page
from ._values import full_text

if TYPE_CHECKING:  # pragma: no cover
    from aiohttp import web

__all__ = ["SECURITY_HEADERS", "create_app"]

HERE = Path(__file__).parent
STATIC_TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def case_path(case_id: str) -> str:
    """A case id as URL path segments: ``/`` stays a separator, everything else is escaped."""
    return quote(case_id, safe="/")


def _urls(run_id_path: Callable[[str], str]) -> dict[str, Callable[..., str]]:
    def run_url(run_id: str, filters: Collection[str] = (), q: str = "", page: int = 1) -> str:
        params: list[tuple[str, Any]] = [("filter", f) for f in sorted(filters)]
        params += [("q", q)] if q else []
        params += [("page", page)] if page != 1 else []
        return run_id_path(run_id) + (f"?{urlencode(params)}" if params else "")

    def trial_url(run_id: str, case_id: str, variant: str, trial: int, **extra: Any) -> str:
        query = urlencode({"variant": variant, "trial": trial, **{k: v for k, v in extra.items() if v}})
        return f"{run_id_path(run_id)}/trials/{case_path(case_id)}?{query}"

    def cell_url(run_id: str, case_id: str, variant: str, **extra: Any) -> str:
        query = urlencode({"variant": variant, **{k: v for k, v in extra.items() if v}})
        return f"{run_id_path(run_id)}/cells/{case_path(case_id)}?{query}"

    def value_url(run_id: str, case_id: str, variant: str, trial: int, at: str) -> str:
        query = urlencode({"variant": variant, "trial": trial, "at": at})
        return f"{run_id_path(run_id)}/value/{case_path(case_id)}?{query}"

    def compare_url(base: str, cand: str, statuses: Collection[str] = ()) -> str:
        params = [("base", base), ("cand", cand), *(("status", s) for s in statuses)]
        return f"/compare?{urlencode(params)}"

    def compare_cell_url(base: str, cand: str, case_id: str, variant: str, bt: int = 0, ct: int = 0) -> str:
        query = urlencode({"base": base, "cand": cand, "variant": variant, "bt": bt, "ct": ct})
        return f"/compare/cells/{case_path(case_id)}?{query}"

    return {"run_url": run_url, "trial_url": trial_url, "cell_url": cell_url, "value_url": value_url,
            "compare_url": compare_url, "compare_cell_url": compare_cell_url}


def template_env() -> tuple[Any, dict[str, tuple[bytes, str]]]:
    """The pages' Jinja2 environment (autoescaping, the view's filters, ``FILTERS``) and the
    static files by name (body, content type); the caller adds the URL globals."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(_format.FILTERS)
    from . import _stats

    env.filters.update(_stats.FILTERS)  # intervals
    env.globals["FILTERS"] = FILTERS
    static: dict[str, tuple[bytes, str]] = {}
    for path in sorted((HERE / "static").iterdir()):
        if path.suffix in STATIC_TYPES:
            static[path.name] = (path.read_bytes(), STATIC_TYPES[path.suffix])
    return env, static


def create_app(
    data: ViewData,
    *,
    title: str,
    project_folder: str,
    allowed_hosts: Collection[str] | None = None,
) -> web.Application:
    """The view over ``data``. ``allowed_hosts``: the ``Host`` header values accepted (a view
    bound to this machine refuses others, so a web page elsewhere cannot reach it through DNS
    rebinding); None accepts any."""
    from aiohttp import web

    env, static = template_env()
    version = hashlib.sha256(b"".join(body for body, _ in static.values())).hexdigest()[:10]
    env.globals.update(
        _urls(lambda run_id: f"/runs/{quote(run_id, safe='')}"),
        title=title,
        project_folder=project_folder,
        asset=lambda name: f"/static/{name}?v={version}",
        home_url=lambda: "/",
        static_export=False,
    )

    for name in ("runs.html", "run.html", "trial.html", "cell.html", "compare.html", "compare_cell.html",
                 "not_found.html"):
        env.get_template(name)  # compiled now, not on a person's first click

    def render(name: str, context: dict[str, Any], status: int = 200) -> web.Response:
        body = env.get_template(name).render(**context)
        return web.Response(text=body, status=status, content_type="text/html", charset="utf-8")

    def not_found(what: str) -> web.Response:
        return render("not_found.html", {"what": what}, status=404)

    async def off_loop(fn: Callable[[], web.Response]) -> web.Response:
        # Reading a big run takes a moment: never on the event loop.
        return await asyncio.to_thread(fn)

    async def runs(request: web.Request) -> web.Response:
        return await off_loop(lambda: render("runs.html", runs_page(data)))

    async def run(request: web.Request) -> web.StreamResponse:
        run_id = request.match_info["run_id"]
        if run_id == "latest":
            rows = [r for r in data.runs() if r.status != "unreadable"]
            if rows:
                raise web.HTTPFound(f"/runs/{quote(rows[0].run_id, safe='')}")
        query = GridQuery.parse(request.query, request.query.getall("filter", []))

        def page() -> web.Response:
            ctx = grid_page(data, run_id, query)
            return not_found(f"run {run_id}") if ctx is None else render("run.html", ctx)

        return await off_loop(page)

    def _trial_args(request: web.Request) -> tuple[str, str, str | None, int | None]:
        raw = request.query.get("trial", "0")
        index = int(raw) if raw.isdigit() and len(raw) < 10 else None
        return request.match_info["run_id"], request.match_info["case_id"], request.query.get("variant"), index

    async def trial(request: web.Request) -> web.StreamResponse:
        run_id, case_id, variant, index = _trial_args(request)
        raw_from = request.query.get("events", "0")
        events_from = int(raw_from) if raw_from.isdigit() and len(raw_from) < 10 else 0

        def page() -> web.Response:
            v = variant if variant is not None else default_variant(data, run_id, case_id)
            ctx = None if v is None or index is None else trial_page(data, run_id, case_id, v, index, events_from)
            if ctx is None:
                return not_found(f"trial {case_id} #{request.query.get('trial', '0')} of run {run_id}")
            return render("trial.html", ctx)

        return await off_loop(page)

    async def cell(request: web.Request) -> web.StreamResponse:
        run_id, case_id = request.match_info["run_id"], request.match_info["case_id"]
        variant = request.query.get("variant")
        raw_page = request.query.get("page", "1")
        number = int(raw_page) if raw_page.isdigit() and len(raw_page) < 7 else 1

        def page() -> web.Response:
            v = variant if variant is not None else default_variant(data, run_id, case_id)
            ctx = None if v is None else cell_page(data, run_id, case_id, v, number)
            return not_found(f"cell {case_id} of run {run_id}") if ctx is None else render("cell.html", ctx)

        return await off_loop(page)

    async def value(request: web.Request) -> web.StreamResponse:
        run_id, case_id, variant, index = _trial_args(request)
        at = request.query.get("at", "")

        def body() -> web.Response:
            t = data.trial(run_id, case_id, variant, index) if variant is not None and index is not None else None
            text = full_text(t, at) if t is not None else None
            if text is None:
                return web.Response(text="not found\n", status=404, content_type="text/plain")
            return web.Response(text=text, content_type="text/plain", charset="utf-8")

        return await off_loop(body)

    def read_runs(*run_ids: str) -> None:
        try:
            for run_id in run_ids:
                data.run(run_id)
        except Exception:  # noqa: BLE001 - a read ahead: the page that needs it reports what failed
            return

    def _index(raw: str) -> int:
        return int(raw) if raw.isdigit() and len(raw) < 10 else 0

    async def compare(request: web.Request) -> web.StreamResponse:
        base, cand = request.query.get("base", ""), request.query.get("cand", "")
        statuses = request.query.getall("status", [])

        def page() -> web.Response:
            ctx = compare_page(data, base, cand, statuses) if base and cand else None
            if ctx is None:
                known = getattr(data, "run_summary", data.run)
                missing = [r for r in (base, cand) if not r or known(r) is None]
                return not_found(" or ".join(f"run {r}" if r else "run named" for r in missing) or "page")
            return render("compare.html", ctx)

        response = await off_loop(page)
        if response.status == 200:
            # The page paired the runs' summaries; a compared cell's page opens their trials:
            # read them now, after the page is out, so that click finds them in memory.
            asyncio.get_running_loop().run_in_executor(None, read_runs, base, cand)
        return response

    async def compare_cell(request: web.Request) -> web.StreamResponse:
        base, cand = request.query.get("base", ""), request.query.get("cand", "")
        case_id, variant = request.match_info["case_id"], request.query.get("variant", "")

        def page() -> web.Response:
            ctx = compare_cell_page(data, base, cand, case_id, variant, _index(request.query.get("bt", "0")),
                                    _index(request.query.get("ct", "0")))
            if ctx is None:
                return not_found(f"cell {case_id} in runs {base} and {cand}")
            return render("compare_cell.html", ctx)

        return await off_loop(page)

    async def asset(request: web.Request) -> web.StreamResponse:
        found = static.get(request.match_info["name"])
        if found is None:
            return not_found("file")
        body, kind = found
        return web.Response(body=body, content_type=kind, charset="utf-8",
                            headers={"Cache-Control": "public, max-age=31536000, immutable"})

    @web.middleware
    async def guard(request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
        if allowed_hosts is not None and request.host.lower() not in allowed_hosts:
            return web.Response(text="this view answers only requests addressed to it by its own URL\n",
                                status=403, content_type="text/plain")
        try:
            return await handler(request)
        except web.HTTPNotFound:
            return not_found("page")

    async def headers(request: web.Request, response: web.StreamResponse) -> None:
        response.headers.update(SECURITY_HEADERS)
        response.headers.setdefault("Cache-Control", "no-store")

    app = web.Application(middlewares=[guard])
    app.on_response_prepare.append(headers)
    app.router.add_get("/", runs)
    app.router.add_get("/runs/{run_id}", run)
    app.router.add_get("/runs/{run_id}/trials/{case_id:.+}", trial)
    app.router.add_get("/runs/{run_id}/cells/{case_id:.+}", cell)
    app.router.add_get("/runs/{run_id}/value/{case_id:.+}", value)
    app.router.add_get("/compare", compare)
    app.router.add_get("/compare/cells/{case_id:.+}", compare_cell)
    app.router.add_get("/static/{name}", asset)
    return app
