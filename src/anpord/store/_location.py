"""Where the run store lives and how it is named to people — without importing SQLAlchemy.

``ANPORD_DB`` chooses the store: unset, the project's SQLite file ``.anpord/anpord.db``; a
``postgresql://`` URL (or ``sqlite:///path``), that database; ``off``, no store at all. Runs of
several projects can share one database: each run is filed under its project's key, the project
folder's name unless ``ANPORD_PROJECT`` says otherwise.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

__all__ = [
    "DB_ENV",
    "PROJECT_ENV",
    "StoreError",
    "StoreLocation",
    "describe_failure",
    "hide_passwords",
    "mask_url",
    "store_location",
    "url_passwords",
]

DB_ENV = "ANPORD_DB"
PROJECT_ENV = "ANPORD_PROJECT"
DEFAULT_FILE = Path(".anpord") / "anpord.db"
REBUILD_HINT = "`anpord db rebuild` re-creates it from the run folders"


class StoreError(Exception):
    """The run store cannot be used: one line saying why and what to do."""


@dataclass(frozen=True)
class StoreLocation:
    url: str  # as SQLAlchemy takes it (the driver named)
    project: str  # the key this project's runs are filed under
    project_folder: Path
    path: Path | None = None  # the SQLite file, when the store is one

    @property
    def kind(self) -> str:
        return "sqlite" if self.url.startswith("sqlite") else "postgresql"

    @property
    def display(self) -> str:
        """The store as shown in messages: a path, or the URL without its password."""
        if self.path is not None:
            try:
                return os.path.relpath(self.path)
            except ValueError:
                return str(self.path)
        return mask_url(self.url.replace("+psycopg", "", 1))


# Query parameters libpq reads a password from (``?password=…``, ``&sslpassword=…``).
_PASSWORD_PARAM = re.compile(r"(?i)([?&](?:password|passwd|pass|sslpassword)=)([^&#]*)")


# libpq's keyword/value form (``host=db password=secret``, ``password = 'two words'``).
_PASSWORD_KEYWORD = re.compile(r"(?i)((?:^|\s)(?:password|sslpassword)\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s']*)")


def _userinfo_password(raw: str) -> tuple[int, int] | None:
    """Where the password of ``user:password@host`` is in ``raw``: up to the last ``@`` before
    the host, which is the last ``@`` of all: a malformed URL may hold an unescaped ``@``, ``/``,
    ``?`` or ``:`` in it (a query holding an ``@`` masks more than it needs, never less).
    Without an ``@``, everything after the user's ``:`` (``user:pass`` with no host) counts."""
    start = raw.find("://") + 3 if "://" in raw else 0
    end = len(raw.split("?", 1)[0])
    at = raw.rfind("@", start)
    colon = raw.find(":", start, at if at >= 0 else end)
    if colon < 0:
        return None
    if at < 0:
        # No "@": a port (host:5432/db) is digits, anything else may be a password.
        port = re.match(r"\d*(?:/|$)", raw[colon + 1 : end])
        return None if port else (colon + 1, end)
    return colon + 1, at


def url_passwords(raw: str) -> list[str]:
    """Every password a database URL holds (userinfo and query), well-formed or not."""
    found = [m.group(2) for m in _PASSWORD_PARAM.finditer(raw) if m.group(2)]
    if "://" not in raw:
        found += [m.group(2) for m in _PASSWORD_KEYWORD.finditer(raw) if m.group(2)]
    span = _userinfo_password(raw)
    if span is not None and span[1] > span[0]:
        found.append(raw[span[0] : span[1]])
    return sorted(set(found), key=len, reverse=True)


def mask_url(raw: str) -> str:
    """``raw`` with every password in it (see ``url_passwords``) shown as ``***``."""
    if "://" not in raw and _PASSWORD_KEYWORD.search(raw):
        return _PASSWORD_KEYWORD.sub(r"\1***", raw)
    span = _userinfo_password(raw)
    if span is not None and span[1] > span[0]:
        raw = raw[: span[0]] + "***" + raw[span[1] :]
    return _PASSWORD_PARAM.sub(r"\1***", raw)


def hide_passwords(text: str, url: str) -> str:
    """``text`` (a driver's error, which may quote its connection string) without ``url``'s
    passwords."""
    for password in url_passwords(url):
        text = text.replace(password, "***")
    return text


def store_location(project_folder: Path) -> StoreLocation | None:
    """The store for this project, or ``None`` when ``ANPORD_DB=off``. Raises ``StoreError``
    for a URL this anpord cannot use."""
    project = os.environ.get(PROJECT_ENV) or project_folder.resolve().name or "default"
    raw = os.environ.get(DB_ENV, "").strip()
    if raw.lower() in ("off", "none", "0", "false"):
        return None
    if not raw:
        return StoreLocation(
            f"sqlite:///{project_folder / DEFAULT_FILE}",
            project,
            project_folder,
            project_folder / DEFAULT_FILE,
        )
    scheme, sep, rest = raw.partition("://")
    if not sep:
        raise StoreError(
            f"{DB_ENV}={mask_url(raw)!r} is not a database URL (postgresql://user@host/db, "
            "sqlite:///path, or off)"
        )
    scheme = scheme.lower()
    if scheme in ("postgresql", "postgres", "postgresql+psycopg"):
        _check_postgres_url(raw)
        return StoreLocation(f"postgresql+psycopg://{rest}", project, project_folder)
    if scheme == "sqlite":
        path = Path(rest.removeprefix("/")).expanduser()
        if not path.is_absolute():
            path = project_folder / path
        return StoreLocation(f"sqlite:///{path}", project, project_folder, path)
    raise StoreError(
        f"{DB_ENV}: unsupported database {scheme!r} (use postgresql://… or sqlite:///…)"
    )


def _check_postgres_url(raw: str) -> None:
    """Refuse a URL whose parts a driver could read otherwise than ``mask_url`` does: then no
    error message can quote a piece of its password. The refusal shows the URL masked."""
    span = _userinfo_password(raw)
    if span is not None and any(c in raw[span[0] : span[1]] for c in "@/?#"):
        raise StoreError(
            f"{DB_ENV}={mask_url(raw)!r}: the password holds @, /, ? or # unescaped; write them "
            "as %40, %2F, %3F and %23"
        )
    try:
        urlsplit(raw).port  # noqa: B018 - raises for a port that is not a number
    except ValueError:
        raise StoreError(
            f"{DB_ENV}={mask_url(raw)!r} is not a PostgreSQL URL "
            "(postgresql://user:password@host:port/database)"
        ) from None


def describe_failure(exc: BaseException, location: StoreLocation) -> str:
    """A database failure as one line that names the store and the fix."""
    if isinstance(exc, StoreError):
        return str(exc)
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    text = hide_passwords(text, location.url)
    low = text.lower()
    where = location.display
    if location.kind == "sqlite":
        if "locked" in low or "busy" in low:
            return f"the run store {where} is locked by another process ({text}): try again when it is done"
        if "not a database" in low or "malformed" in low or "corrupt" in low:
            return f"the run store {where} is damaged ({text}): {REBUILD_HINT}"
        if (
            "readonly" in low
            or "read-only" in low
            or "unable to open" in low
            or "permission" in low
        ):
            return f"cannot write the run store {where} ({text})"
        return f"the run store {where} failed ({text}): {REBUILD_HINT}"
    if type(orig).__name__ in ("OperationalError", "ConnectionTimeout") or "connect" in low:
        return (
            f"cannot reach the run store at {where} ({text}): start the database, or unset "
            "ANPORD_DB to use the project's SQLite file"
        )
    return f"the run store at {where} failed ({text})"
