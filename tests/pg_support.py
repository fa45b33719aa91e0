"""A throwaway PostgreSQL server for tests: ``initdb`` into a temp folder, ``pg_ctl start`` on a
free port (TCP on 127.0.0.1, its unix socket in the same folder), stopped and removed at the end.

PostgreSQL refuses to run as root, so as root the cluster is made and run by the ``postgres``
user (Debian's package creates it). A machine without PostgreSQL fails the tests that need it,
with what to install — they are never skipped.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

USER = "anpord"


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise RuntimeError("PostgreSQL is not installed (initdb not found): apt-get install postgresql")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresServer:
    folder: Path
    port: int

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    bindir = _bindir()
    folder = Path(tempfile.mkdtemp(prefix="anpord-pg-"))
    as_root = os.geteuid() == 0
    run_as: list[str] = []
    if as_root:
        pw = pwd.getpwnam("postgres")
        os.chown(folder, pw.pw_uid, pw.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    data, port = folder / "data", free_port()

    def pg(*args: str) -> None:
        proc = subprocess.run(
            [*run_as, *args], capture_output=True, text=True, check=False, timeout=120
        )
        if proc.returncode != 0:
            raise RuntimeError(
                f"{' '.join(args[:2])} failed ({proc.returncode}): {proc.stderr or proc.stdout}"
            )

    pg(
        str(bindir / "initdb"),
        "-D",
        str(data),
        "-U",
        USER,
        "-A",
        "trust",
        "--no-sync",
        "-E",
        "UTF8",
    )
    pg(
        str(bindir / "pg_ctl"),
        "-D",
        str(data),
        "-l",
        str(folder / "log"),
        "-w",
        "-t",
        "60",
        "-o",
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off",
        "start",
    )
    try:
        yield PostgresServer(folder, port)
    finally:
        try:
            pg(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        finally:
            time.sleep(0.1)
            shutil.rmtree(folder, ignore_errors=True)
