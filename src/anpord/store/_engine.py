"""Opening the store: an engine for its URL, the schema brought up to date, and every database
failure turned into one ``StoreError`` line that says what to do.

SQLite runs in WAL mode (readers never wait for the writer of a run in progress) with a short
busy timeout, and with transactions begun explicitly (the sqlite3 module's own implicit ones are
switched off, as SQLAlchemy's documentation recommends). PostgreSQL is reached through psycopg 3.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from ._location import REBUILD_HINT, StoreError, StoreLocation, describe_failure
from ._schema import MIGRATIONS, SCHEMA_VERSION, metadata, schema_version

__all__ = ["connect", "describe_failure", "read_version", "translate"]

CONNECT_TIMEOUT = 5  # seconds to reach a PostgreSQL server


def connect(
    location: StoreLocation, *, busy_timeout: float = 5.0, create: bool = True
) -> sa.Engine:
    """An engine whose schema is current. ``create=False`` refuses to make a new SQLite file."""
    if location.path is not None:
        if not create and not location.path.exists():
            raise StoreError(
                f"no run store at {location.display} yet (run `anpord eval`, or "
                "`anpord db rebuild` to index the runs already there)"
            )
        try:
            location.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create {location.display}: {exc.strerror or exc}") from None
        engine = sa.create_engine(
            location.url, connect_args={"timeout": busy_timeout}, poolclass=sa.pool.NullPool
        )
        _sqlite_transactions(engine)
    else:
        engine = sa.create_engine(
            location.url,
            poolclass=sa.pool.NullPool,
            connect_args={"connect_timeout": CONNECT_TIMEOUT},
        )
    try:
        migrate(engine, location)
    except BaseException:
        engine.dispose()
        raise
    return engine


def _sqlite_transactions(engine: sa.Engine) -> None:
    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):  # type: ignore[no-untyped-def]
        dbapi_connection.isolation_level = None  # we say BEGIN ourselves
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn):  # type: ignore[no-untyped-def]
        # IMMEDIATE takes the write lock up front (waiting up to the busy timeout), so a write
        # never fails half-way for a lock another writer holds.
        immediate = conn.get_execution_options().get("anpord_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


@contextlib.contextmanager
def writing(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A write transaction."""
    with engine.connect() as conn:
        conn = conn.execution_options(anpord_write=True)
        with conn.begin():
            yield conn


def read_version(conn: sa.Connection) -> int | None:
    """The store's schema version; ``None`` for an empty database."""
    if not sa.inspect(conn).has_table("schema_version"):
        return None
    found = conn.execute(sa.select(sa.func.max(schema_version.c.version))).scalar()
    return int(found) if found is not None else None


def migrate(engine: sa.Engine, location: StoreLocation) -> None:
    with engine.connect() as conn, conn.begin():
        version = read_version(conn)
    if version == SCHEMA_VERSION:
        return
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError(
            f"the run store {location.display} was written by a newer anpord (schema {version}; "
            f"this one knows {SCHEMA_VERSION}): upgrade anpord, or {REBUILD_HINT}"
        )
    with writing(engine) as conn:
        version = read_version(conn)  # another process may have got here first
        if version is None:
            metadata.create_all(conn)
            conn.execute(
                schema_version.insert(), {"version": SCHEMA_VERSION, "applied_at": time.time()}
            )
            return
        for step in range(version + 1, SCHEMA_VERSION + 1):
            MIGRATIONS[step](conn)
            conn.execute(schema_version.insert(), {"version": step, "applied_at": time.time()})


def translate(location: StoreLocation) -> contextlib.AbstractContextManager[None]:
    """A context in which a database failure becomes a ``StoreError``."""

    @contextlib.contextmanager
    def guard() -> Iterator[None]:
        try:
            yield
        except StoreError:
            raise
        except (sa_exc.SQLAlchemyError, OSError) as exc:
            raise StoreError(describe_failure(exc, location)) from exc
        except Exception as exc:  # a driver error SQLAlchemy did not wrap
            if type(exc).__module__.split(".")[0] in ("sqlite3", "psycopg"):
                raise StoreError(describe_failure(exc, location)) from exc
            raise

    return guard()
