"""The run store's filer: a process of its own that files a running run's trials from its folder.

The runner appends each finished trial to the run folder's ``results.jsonl``, already redacted;
the filer reads what is new there every ``LOOK`` seconds and files it, and files each cell as
soon as all its planned trials are in, so the runner's process spends nothing per trial on the
store. Filing in a thread of the runner's process holds the interpreter's lock the trials need:
on two cores that cost 5,000 trivial trials about 16% of their wall, against 0-6% with the filer
(``bench/runner_overhead.py``). Where the process has one core to run on, or the run is small,
the filer's own start (about 0.2 s) would cost more than it saves, and ``StoreWriter`` files in
its thread (``filer_wanted``).

The runner's side (``Filer``) talks to it over its standard input and output, one JSON line
each way: the filer's settings, then ``finish`` (read to the end, file every cell, answer) — or
the end of its input (the runner stopped writing, or died): then it files what it has and ends.
What the filer files is what ``anpord db rebuild`` would file from the same folder: a trial
written twice (run again) counts once, as its last line says.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from ._location import StoreError, StoreLocation

__all__ = ["FILER_ENV", "Filer", "filer_wanted"]

LOOK = 0.1  # seconds between reads of results.jsonl
READ_LIMIT = 64 << 20  # bytes read in one go: a run of huge records is filed in several


FILER_ENV = "ANPORD_STORE_FILER"
FILER_MODES = ("auto", "process", "thread")


def filer_wanted(trials: int, threshold: int) -> bool:
    """Whether a new run of ``trials`` files from a process of its own. ``ANPORD_STORE_FILER``:
    ``auto`` (the default) with ``threshold`` trials or more and a second core to run it on,
    ``process`` always, ``thread`` never. ``StoreError`` for another value."""
    mode = os.environ.get(FILER_ENV, "").strip().lower() or "auto"
    if mode not in FILER_MODES:
        raise StoreError(f"{FILER_ENV} is {os.environ[FILER_ENV]!r}: use one of {', '.join(FILER_MODES)}")
    if sys.platform == "win32":
        return False  # the filer waits on its pipe with select(), which takes sockets alone there
    if mode != "auto":
        return mode == "process"
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return trials >= threshold and cores > 1


class Filer:
    """The runner's side: the filer process started for one run (``start``), told to finish
    (``finish``: its answer, ``None`` when filed, else why not) or left to end (``abandon``)."""

    def __init__(self, process: subprocess.Popen[bytes]):
        self.process = process

    @classmethod
    def start(cls, location: StoreLocation, run_dir: str, pk: int, busy_timeout: float) -> Filer:
        settings = {"url": location.url, "project": location.project,
                    "project_folder": str(location.project_folder),
                    "path": str(location.path) if location.path is not None else None,
                    "run_dir": run_dir, "pk": pk, "busy_timeout": busy_timeout}
        env = dict(os.environ)
        # The process imports this installation's anpord, wherever the run found it.
        here = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH")]))
        process = subprocess.Popen(
            # -P: the run's folder, its cwd, never goes on its path ahead of anpord.
            [sys.executable, "-P", "-m", "anpord.store._filer"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=env,
            start_new_session=True,  # Ctrl-C at the terminal stops the run, never its filing
        )
        assert process.stdin is not None
        process.stdin.write(json.dumps(settings).encode() + b"\n")
        process.stdin.flush()
        return cls(process)

    def finish(self, wait: float) -> str | None:
        process = self.process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(b"finish\n")
            process.stdin.close()
        except OSError:
            pass
        ready, _, _ = select.select([process.stdout], [], [], wait)
        line = process.stdout.readline() if ready else b""
        process.stdout.close()
        if not ready:
            process.kill()
            process.wait()
            return f"the run store's filer did not finish within {wait:.0f}s"
        try:
            answer = json.loads(line)
        except ValueError:
            return f"the run store's filer ended without an answer (exit {process.wait()})"
        # Answered: all it filed is committed. Its interpreter's exit, which takes a while, is
        # no reason for the run to wait.
        threading.Thread(target=process.wait, name="anpord-filer-exit", daemon=True).start()
        return answer.get("failure")

    def abandon(self) -> None:
        """The run ends without its final state: the filer files what it has read, and ends.
        Nothing waits for that, but a thread reaps the process once it has: a program running
        many runs does not collect a defunct filer for each one abandoned."""
        process = self.process
        for pipe in (process.stdin, process.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass
        threading.Thread(target=process.wait, name="anpord-filer-exit", daemon=True).start()


# -- the filer process ----------------------------------------------------------------------------


class _Filing:
    """What the filer knows of the run: its cells' places and plans, and each cell's trials."""

    def __init__(self, db: Any, run_dir: Path, pk: int):
        from ..results._reader import read_record
        from ._rows import variants_by_label

        self.db, self.run_dir, self.pk = db, run_dir, pk
        record = read_record(run_dir)  # as the run started: its plan
        self.cells = record.cells
        self.variants = variants_by_label(record)
        self.places = {(c.case_id, c.variant): i for i, c in enumerate(record.cells)}
        self.trials: dict[int, dict[int, Any]] = {}  # cell place -> trial index -> result
        self.filed: set[int] = set()  # cells filed with the trials they have now
        self.offset = 0

    def read(self) -> None:
        """File every trial written since the last read, and the cells they complete."""
        while self._read_some():
            pass

    def _read_some(self) -> bool:
        """File the trials of one read (``READ_LIMIT`` bytes, or one line longer than that);
        whether it found any."""
        from ..results._reader import read_trial_line
        from . import _writes as w
        from ._rows import planned_count, trial_tuple

        path = self.run_dir / "results.jsonl"
        try:
            with open(path, "rb") as f:
                f.seek(self.offset)
                data = f.read(READ_LIMIT)
                while len(data) >= READ_LIMIT and b"\n" not in data:  # one line that long
                    more = f.read(READ_LIMIT)
                    if not more:
                        break
                    data += more
        except FileNotFoundError:
            return False
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next read
        if not end:
            return False
        self.offset += end
        rows: dict[tuple[int, int], tuple[Any, ...]] = {}
        touched: set[int] = set()
        for line in data[:end].split(b"\n"):
            if not line.strip():
                continue
            try:
                result = read_trial_line(line, lean=True)
            except (ValueError, TypeError):
                continue  # not a trial record: `anpord db rebuild` skips it the same way
            idx = self.places.get(result.cell_key)
            if idx is None:
                continue
            rows[(idx, result.trial)] = trial_tuple(result, idx, str)  # the line is redacted
            self.trials.setdefault(idx, {})[result.trial] = result
            touched.add(idx)
        self.filed -= touched
        done = [i for i in touched if len(self.trials[i]) >= planned_count(self.cells[i])]
        with self.db.transaction():
            w.put_trials(self.db, self.pk, list(rows.values()))
            self._put_cells(done)
        return True

    def finish(self) -> None:
        """Every cell of the run, with the trials it has (none: filed without a distribution)."""
        self.read()
        with self.db.transaction():
            self._put_cells(range(len(self.cells)))

    def _put_cells(self, places: Any) -> None:
        from ..results._model import summarize_cell
        from . import _writes as w
        from ._rows import cell_tuple

        rows = []
        for i in places:
            if i in self.filed:
                continue
            have = self.trials.get(i)
            summary = summarize_cell([have[t] for t in sorted(have)]) if have else None
            cell = self.cells[i]
            rows.append(cell_tuple(i, cell, self.variants.get(cell.variant, {}), summary))
            self.filed.add(i)
        w.put_cells(self.db, self.pk, rows)


def _main() -> int:
    from ._location import describe_failure
    from ._writes import open_db

    stdin = sys.stdin.buffer
    settings = json.loads(stdin.readline())
    location = StoreLocation(url=settings["url"], project=settings["project"],
                             project_folder=Path(settings["project_folder"]),
                             path=Path(settings["path"]) if settings["path"] else None)
    failure: str | None = None
    filing: _Filing | None = None
    finish = False
    try:
        filing = _Filing(open_db(location, busy_timeout=settings["busy_timeout"]), Path(settings["run_dir"]),
                         settings["pk"])
        while True:
            ready, _, _ = select.select([stdin], [], [], LOOK)
            if ready:
                finish = stdin.readline().strip() == b"finish"
                break  # told to finish, or the runner is gone: what is there is filed below
            filing.read()
        if finish:
            filing.finish()
        else:
            filing.read()
    except Exception as exc:  # noqa: BLE001 - said to the runner, which warns and goes on
        try:
            failure = describe_failure(exc, location)
        except Exception:  # noqa: BLE001
            failure = f"the run store failed: {type(exc).__name__}: {exc}"
    try:
        sys.stdout.write(json.dumps({"failure": failure}) + "\n")
        sys.stdout.flush()
    except OSError:
        pass
    # After the answer: what was filed is committed, and closing (SQLite copies its write-ahead
    # log into the database then) takes a while the run need not wait for.
    if filing is not None:
        filing.db.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
