"""Fixtures for the run store: a real PostgreSQL server for the session, and one store per test
on each backend."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_support import PostgresServer, postgres_server

_databases = itertools.count()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    with postgres_server() as server:
        yield server


@pytest.fixture
def pg_url(postgres: PostgresServer) -> str:
    """A fresh, empty database on the session's server."""
    return postgres.create_database(f"anpord_test_{next(_databases)}")


@pytest.fixture(params=["sqlite", "postgresql"])
def backend_env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """``ANPORD_DB`` for each backend: unset (the project's SQLite file), or a fresh PostgreSQL
    database."""
    if request.param == "sqlite":
        return {}
    return {"ANPORD_DB": request.getfixturevalue("pg_url")}
