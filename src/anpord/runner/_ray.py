"""``RayExecutor``: trials run on a Ray cluster, by a pool of worker actors.

Each worker is an async Ray actor holding a ``TrialWorker``: it sets each harness up once and runs
many trials at once on its event loop. The driver keeps the scheduling state — it takes specs from
the run's iterator only as workers have room, sends them in batches, and gets each batch's
results back as a stream, several trials to a message — and reports through the sink, so the run
folder, the console and the reports are written as for a local run.

What travels: the project folder, through Ray's runtime environment (``working_dir``, without
``.anpord/``, ``.git/`` and virtualenvs). A worker reads the project from that copy; the specs
keep the driver's paths and ``_spec.use_project_copy`` maps them. anpord and the agent's
dependencies must be installed on the cluster; ``RayExecutor.connect`` checks every node's Python
and anpord against the driver's with a tiny task before any trial is scheduled.

Faults: a worker that dies (its process killed, its node lost) has its running trials run again
on another worker with ``attempt=1``; a trial whose second worker dies too is ``void`` with the
reason. A dead worker is replaced. Nothing taken from the iterator is lost or reported twice.

Ray is imported only here, and this module only when a run asks for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import platform
import socket
import sys
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError, exception_line
from ._remote import TrialWorker, trial_from_wire
from ._spec import TrialSpec, driver_paths, use_project_copy

if TYPE_CHECKING:
    from ._executor import TrialSink

__all__ = ["SANDBOX_RESOURCE", "NodeRoom", "RayExecutor", "WorkerShape", "plan_workers", "project_excludes"]

# A node says how many sandboxes it can hold at once: ``ray start --resources '{"anpord_sandbox": 8}'``.
SANDBOX_RESOURCE = "anpord_sandbox"
# What never travels with the project: run folders and stores, version control, caches.
EXCLUDES = (".anpord/", ".git/", ".hg/", ".venv/", "venv/", ".tox/", ".nox/", "__pycache__/",
            ".mypy_cache/", ".pytest_cache/", ".ruff_cache/")
CONNECT_TIMEOUT = 5.0  # seconds to reach the cluster's address at all
PROBE_TIMEOUT = 120.0  # seconds for every node to run the probe (it sets the project up there)
START_TIMEOUT = 300.0  # seconds for a worker to be placed and started before it is given up
CLOSE_TIMEOUT = 10.0  # seconds for workers to cancel their trials and tear harnesses down
LINGER = 0.01  # a worker waits this long after a trial finishes, to send others with it
LOG_FLUSH = 0.5  # log lines of running trials reach the driver at least this often
REPLACEMENTS_PER_WORKER = 2  # dead workers replaced, per worker planned


# -- sizing the pool ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeRoom:
    """What a node offers: its CPUs, its memory (bytes) and, when it declares them, its sandbox
    slots."""

    node_id: str
    cpus: float
    sandboxes: float | None = None
    memory: float | None = None


@dataclass(frozen=True)
class WorkerShape:
    """One worker to start: its node (preferred, not required; ``None``: wherever Ray finds
    room), how many trials it runs at once and how many sandboxes it may hold open (``None``: no
    limit)."""

    node_id: str | None
    slots: int
    sandboxes: int | None


def _split(total: int, parts: int) -> list[int]:
    """``total`` in ``parts`` shares differing by at most one, largest first."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def plan_workers(nodes: Sequence[NodeRoom], *, max_concurrency: int, max_sandboxes: int | None = None,
                 cpus_per_worker: float = 1.0, memory_per_worker: int | None = None) -> list[WorkerShape]:
    """The worker pool for a cluster: one worker per ``cpus_per_worker`` CPUs a node has (a
    worker's trials share one event loop, so more than one core each buys nothing), spread evenly
    over the nodes, and as many as fit in a node's memory when each reserves ``memory_per_worker``
    bytes; no more workers than trials may run at once; the run's concurrency split among them.
    When nodes declare sandbox slots, only those nodes get workers, each worker
    reserves its share of its node's slots, and that share bounds its open sandboxes; the config's
    ``max_sandboxes`` bounds their sum. Raises ``UsageError`` when no node can hold a worker."""
    declared = any(n.sandboxes for n in nodes)
    room: dict[str, int] = {}
    for n in nodes:
        fits = math.floor(n.cpus / cpus_per_worker + 1e-9)
        if declared:
            fits = min(fits, math.floor(n.sandboxes or 0))
        if memory_per_worker:
            fits = min(fits, math.floor((n.memory or 0) / memory_per_worker))
        if fits > 0:
            room[n.node_id] = fits
    if not room:
        needs = [f"{cpus_per_worker:g} CPU"]
        if memory_per_worker:
            needs.append(f"{memory_per_worker / (1 << 30):,.1f} GiB of memory")
        if declared:
            needs.append(f"1 {SANDBOX_RESOURCE}")
        listed = ", ".join(needs[:-1]) + " and " + needs[-1] if len(needs) > 1 else needs[0]
        raise UsageError(f"no node of the Ray cluster can hold an anpord worker (each needs {listed})")
    wanted = min(sum(room.values()), max_concurrency, max_sandboxes or max_concurrency)
    placed: dict[str, int] = dict.fromkeys(room, 0)
    while sum(placed.values()) < wanted:  # round-robin: every node gets workers before any gets two
        for node_id, fits in room.items():
            if placed[node_id] < fits and sum(placed.values()) < wanted:
                placed[node_id] += 1
    order = [node_id for node_id, count in placed.items() for _ in range(count)]
    slots = _split(max_concurrency, len(order))
    shares: list[int | None] = [None] * len(order)
    if declared:  # each node's slots split among its workers
        for node in nodes:
            count = placed.get(node.node_id, 0)
            node_shares = iter(_split(math.floor(node.sandboxes or 0), count) if count else ())
            shares = [next(node_shares) if n == node.node_id else s for n, s in zip(order, shares)]
    if max_sandboxes is not None:
        capped = _split(max_sandboxes, len(order))
        shares = [c if s is None else min(s, c) for s, c in zip(shares, capped)]
    return [WorkerShape(node_id, slot, None if share is None else min(share, slot))
            for node_id, slot, share in zip(order, slots, shares)]


def project_excludes(folder: Path) -> list[str]:
    """The upload's excludes: ``EXCLUDES`` and any virtualenv at the project's top level, whatever
    its name (it holds ``pyvenv.cfg``)."""
    venvs = []
    try:
        for child in sorted(folder.iterdir()):
            if child.is_dir() and (child / "pyvenv.cfg").is_file():
                venvs.append(f"/{child.name}/")
    except OSError:
        pass
    return [*EXCLUDES, *venvs]


def _digest_function() -> Any:
    """``source_digest(package_dir)``: a digest of an anpord installation's Python sources (the
    same version number can be other code: another checkout, a patched install; a worker must run
    the driver's). Made in a function so that Ray ships it by value, inside the probe."""

    def source_digest(package_dir: str) -> str:
        import hashlib
        from pathlib import Path

        digest = hashlib.sha256()
        root = Path(package_dir)
        for path in sorted(root.rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()[:16]

    return source_digest


_source_digest = _digest_function()


def _driver_versions() -> dict[str, str]:
    import anpord

    return {"python": platform.python_version(), "anpord": anpord.__version__,
            "code": _source_digest(os.path.dirname(anpord.__file__))}


def version_mismatch(driver: dict[str, str], here: dict[str, str | None]) -> str | None:
    """Why a worker with versions ``here`` cannot run the driver's trials, or None."""
    if here.get("anpord") is None:
        return f"anpord is not installed there ({here.get('error') or 'no module named anpord'})"
    if here["anpord"] != driver["anpord"]:
        return f"it has anpord {here['anpord']}, this driver {driver['anpord']}"
    if here.get("code") != driver["code"]:
        return (f"its anpord {here['anpord']} is other code than this driver's (another checkout or a "
                "changed install): install the driver's anpord there")
    ours, theirs = driver["python"].split(".")[:2], str(here.get("python")).split(".")[:2]
    if ours != theirs:
        return f"it runs Python {here.get('python')}, this driver Python {driver['python']}"
    return None


def _probe() -> Any:
    """The probe, defined in a function so Ray ships it by value: it runs even where anpord is
    missing or another version, and says so."""
    digest = _source_digest

    def probe() -> dict[str, str | None]:
        import os
        import platform

        out: dict[str, str | None] = {"python": platform.python_version(), "anpord": None, "error": None}
        try:
            import anpord

            out["anpord"], out["code"] = anpord.__version__, digest(os.path.dirname(anpord.__file__))
        except Exception as exc:  # noqa: BLE001 - reported to the driver
            out["error"] = f"{type(exc).__name__}: {exc}"
        return out

    return probe


# -- the worker actor ------------------------------------------------------------------------------


class TrialActor:
    """One worker on the cluster (wrapped with ``ray.remote`` by the driver): a ``TrialWorker``
    that runs the batches it is sent, many trials at once, streaming their results back."""

    def __init__(self, driver_folder: str, versions: dict[str, str], slots: int, sandboxes: int | None):
        import ray

        why = version_mismatch(versions, dict(_driver_versions()))
        if why:
            raise RuntimeError(f"this node cannot run the driver's trials: {why}")
        use_project_copy(driver_folder, os.getcwd())  # the runtime env's copy of the project
        node_id = ray.get_runtime_context().get_node_id()
        self.host = f"{socket.gethostname()}/{node_id[:12]}"
        self.logs: list[tuple[tuple[str, str, int], str]] = []
        self.worker = TrialWorker(slots, sandboxes, host=self.host, on_log=self._log)
        self.running: set[asyncio.Future[Any]] = set()

    def _log(self, spec: TrialSpec, message: str) -> None:
        self.logs.append((spec.key, driver_paths(message)))

    def _take_logs(self) -> list[tuple[tuple[str, str, int], str]]:
        logs, self.logs = self.logs, []
        return logs

    async def ready(self) -> dict[str, Any]:
        return {"host": self.host, "pid": os.getpid()}

    async def _one(self, spec: TrialSpec) -> tuple[tuple[str, str, int], dict[str, Any], list[dict[str, Any]]]:
        try:
            record, events = await self.worker.run(spec)
        except Exception as exc:  # noqa: BLE001 - the trial is void with the reason, never lost
            from ._local import _unrunnable

            record, events = _unrunnable(spec, f"the worker failed: {exception_line(exc)}", self.host).to_dict(), []
        return spec.key, record, events

    async def run(self, specs: list[TrialSpec]) -> Any:
        """Run a batch; yield ``(finished, logs)`` as trials finish: ``finished`` holds ``(key,
        record, events)`` of every trial done at that moment (or within ``LINGER`` of it)."""
        tasks = {asyncio.ensure_future(self._one(s)) for s in specs}
        self.running |= tasks
        pending = set(tasks)
        try:
            while pending:
                done, pending = await asyncio.wait(pending, timeout=LOG_FLUSH, return_when=asyncio.FIRST_COMPLETED)
                if done and pending:
                    more, pending = await asyncio.wait(pending, timeout=LINGER)
                    done |= more
                if done or self.logs:
                    yield [t.result() for t in done], self._take_logs()
        finally:
            for t in pending:
                t.cancel()
            if pending:
                await asyncio.wait(pending)
            self.running -= tasks

    async def close(self) -> None:
        """Cancel what still runs (its sandboxes close), then tear the harnesses down."""
        for t in list(self.running):
            t.cancel()
        if self.running:
            await asyncio.wait(self.running)
        await self.worker.close()


# -- the executor ----------------------------------------------------------------------------------


def _memory_bytes(text: str) -> int:
    """``4G``, ``512M``, ``1.5GiB`` or a count of bytes."""
    import re

    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", text.upper())
    if found is None:
        raise UsageError(f"ANPORD_RAY_WORKER_MEMORY={text}: not a size (say 4G or 512M)")
    return int(float(found.group(1)) * 1024 ** " KMGT".index(found.group(2) or " "))


# An HTTP/2 client's opening (the preface and an empty SETTINGS frame): a Ray cluster's address
# is a gRPC server, which answers with a SETTINGS frame of its own.
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _check_reachable(address: str) -> None:
    """An address that does not answer, or not as a Ray cluster (a gRPC server) does, is one
    line now, not minutes of Ray retrying."""
    target = address.removeprefix("ray://")
    if target in ("auto", "local") or "://" in target:
        return
    host, sep, port = target.rpartition(":")
    if not sep:
        host, port = target, "6379"
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT) as conn:
            conn.settimeout(CONNECT_TIMEOUT)
            conn.sendall(_H2_PREFACE)
            answer = b""
            while len(answer) < 9:
                chunk = conn.recv(9 - len(answer))
                if not chunk:
                    break
                answer += chunk
    except ValueError:
        raise UsageError(f"--ray-address {address}: not an address (host:port)") from None
    except TimeoutError:
        raise UsageError(f"the Ray cluster at {address} does not answer (within {CONNECT_TIMEOUT:g} s)") from None
    except OSError as exc:
        raise UsageError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exception_line(exc)}") from None
    if len(answer) < 9 or answer[3] != 4:
        raise UsageError(f"{address} is not a Ray cluster's address (no gRPC server answers there; "
                         "the head's address is the port given to `ray start --head --port`, 6379 by default)")


class RayExecutor:
    """Trials on a Ray cluster. Build it with ``RayExecutor.connect(...)``, which connects,
    sizes the worker pool, starts the workers and checks every node; ``run`` (the ``Executor``
    protocol) schedules the trials on them, then ends the workers and the connection."""

    name = "ray"

    def __init__(self, project_folder: Path, shapes: list[WorkerShape], *, cpus_per_worker: float = 1.0,
                 memory_per_worker: int | None = None, sandbox_resource: bool = False):
        import ray

        self.ray = ray
        self.project_folder = project_folder
        self.shapes = shapes
        self.cpus_per_worker = cpus_per_worker
        self.memory_per_worker = memory_per_worker
        self.sandbox_resource = sandbox_resource
        self.versions = _driver_versions()
        self.actor_class = ray.remote(TrialActor)
        self.workers: list[_Worker] = []
        # How well trials were batched: calls sent, result messages received, trials reported.
        self.stats = {"batches": 0, "messages": 0, "trials": 0}

    @classmethod
    def connect(cls, project_folder: Path, *, address: str | None = None, max_concurrency: int = 8,
                max_sandboxes: int | None = None, secrets: dict[str, str] | None = None,
                cpus_per_worker: float | None = None, memory_per_worker: int | None = None) -> RayExecutor:
        """Connect to the cluster at ``address`` (else ``RAY_ADDRESS``, else Ray's default: a
        cluster started on this machine, or a new one-node Ray for this run) with the project as
        the job's working_dir and ``secrets`` (the variants' declared secrets, read from this
        process's environment) as its environment variables, size the pool from the nodes, start
        the workers and, while they start, check every node with a probe task. Raises
        ``UsageError`` (one line)."""
        try:
            import ray
        except ImportError:
            raise UsageError("--executor ray needs Ray: pip install 'anpord[ray]'") from None
        cpus_per_worker, memory_per_worker = _worker_size(cpus_per_worker, memory_per_worker)
        address = address or os.environ.get("RAY_ADDRESS") or None
        if ray.is_initialized():
            # The project travels as this job's working_dir, which only ray.init can set.
            raise UsageError("Ray is already initialized in this process: let anpord connect (call "
                             "ray.shutdown() first)")
        if address:
            _check_reachable(address)
        runtime_env: dict[str, Any] = {"working_dir": str(project_folder), "excludes": project_excludes(project_folder)}
        if secrets:
            runtime_env["env_vars"] = dict(secrets)
        _connect(ray, address, runtime_env)
        try:
            alive = [n for n in ray.nodes() if n.get("Alive")]
            rooms = [_room(n) for n in alive]
            shapes = plan_workers(rooms, max_concurrency=max_concurrency, max_sandboxes=max_sandboxes,
                                  cpus_per_worker=cpus_per_worker, memory_per_worker=memory_per_worker)
            executor = cls(project_folder, shapes, cpus_per_worker=cpus_per_worker,
                           memory_per_worker=memory_per_worker, sandbox_resource=any(r.sandboxes for r in rooms))
            try:
                for shape in shapes:  # they start while the probes run
                    executor.start_worker(shape)
                _check_nodes(ray, alive, executor.versions)
            except BaseException:
                executor.end_workers()
                raise
        except BaseException:
            ray.shutdown()
            raise
        return executor

    def start_worker(self, shape: WorkerShape) -> _Worker:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        options: dict[str, Any] = {
            "num_cpus": self.cpus_per_worker,
            # Calls in flight at once: every batch it holds (at most one per slot), and control.
            "max_concurrency": shape.slots + 4,
            "max_restarts": 0, "max_task_retries": 0,  # the pool replaces and retries itself
        }
        if shape.node_id is not None:  # soft: the planned node when it has room, else any
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(shape.node_id, soft=True)
        if self.memory_per_worker:
            options["memory"] = self.memory_per_worker
        if self.sandbox_resource and shape.sandboxes:
            options["resources"] = {SANDBOX_RESOURCE: shape.sandboxes}
        handle = self.actor_class.options(**options).remote(
            str(self.project_folder), self.versions, shape.slots, shape.sandboxes)
        worker = _Worker(shape, handle)
        self.workers.append(worker)
        return worker

    def end_workers(self) -> None:
        for worker in self.workers:
            worker.alive = False
            with contextlib.suppress(Exception):  # already gone
                self.ray.kill(worker.handle, no_restart=True)

    async def run(self, specs: Iterator[TrialSpec], sink: TrialSink, stop: asyncio.Event) -> None:
        pool = _Pool(self, specs, sink, stop)
        try:
            await pool.run()
        finally:
            await pool.close()
            self.end_workers()
            self.ray.shutdown()


def _worker_size(cpus: float | None, memory: int | None) -> tuple[float, int | None]:
    """A worker's CPUs and memory: as given, else ``ANPORD_RAY_WORKER_CPUS`` (default 1) and
    ``ANPORD_RAY_WORKER_MEMORY`` (default: none reserved)."""
    env_cpus, env_memory = os.environ.get("ANPORD_RAY_WORKER_CPUS"), os.environ.get("ANPORD_RAY_WORKER_MEMORY")
    if cpus is None:
        try:
            cpus = float(env_cpus) if env_cpus else 1.0
        except ValueError:
            raise UsageError(f"ANPORD_RAY_WORKER_CPUS={env_cpus}: not a number") from None
    if not cpus > 0:
        raise UsageError(f"ANPORD_RAY_WORKER_CPUS={cpus:g}: must be more than 0")
    if memory is None and env_memory:
        memory = _memory_bytes(env_memory)
    return cpus, memory


def _room(node: dict[str, Any]) -> NodeRoom:
    resources = node.get("Resources") or {}
    sandboxes = resources.get(SANDBOX_RESOURCE)
    return NodeRoom(node["NodeID"], float(resources.get("CPU", 0)), None if sandboxes is None else float(sandboxes),
                    float(resources.get("memory", 0)))


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 to nowhere: Ray's core writes its connection retries there, line after
    line; the run says in one line what went wrong."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _connect(ray: Any, address: str | None, runtime_env: dict[str, Any]) -> None:
    """``ray.init`` with the project as the job's working_dir (uploaded now), quietly."""
    import logging

    try:
        with _quiet_stderr():
            ray.init(address=address, runtime_env=runtime_env, logging_level=logging.ERROR,
                     log_to_driver=False, include_dashboard=False)
    except Exception as exc:  # noqa: BLE001 - Ray's own errors, one line each
        import re

        # The upload's size is checked before it is sent (Ray wraps the ValueError it raises).
        too_big = re.search(r"Package size \(([^)]*)\) exceeds the maximum size of ([\d.]+ ?\w+)", str(exc))
        if too_big:
            raise UsageError(f"the project folder {runtime_env['working_dir']} is too large to send to Ray: "
                             f"{too_big[1]} zipped, over Ray's limit of {too_big[2]}; exclude what the trials "
                             "do not need (.gitignore or .rayignore)") from None
        if isinstance(exc, ray.exceptions.RuntimeEnvSetupError):
            raise UsageError(f"cannot send the project to Ray: {_last_line(exc)}") from None
        where = f"cannot use the Ray cluster at {address or 'this machine'}"
        if "Version mismatch" in str(exc):  # Ray's own check: its version and Python's, on lines of their own
            raise UsageError(f"{where}: {' '.join(str(exc).split())[:400]}") from None
        raise UsageError(f"{where}: {exception_line(exc)}") from None
    # Ray prints what the raylet says about dead workers on this process's stdout; the run
    # reports those deaths itself, in its own words.
    import ray._private.worker as ray_worker

    if hasattr(ray_worker, "_worker_logs_enabled"):
        ray_worker._worker_logs_enabled = False


def _check_nodes(ray: Any, alive: list[dict[str, Any]], versions: dict[str, str]) -> None:
    """Run the probe on every live node (it sets the project's copy up there as well); a node that
    cannot run the driver's trials is a ``UsageError``."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    probe = ray.remote(_probe())
    refs = [probe.options(num_cpus=0, max_retries=0,
                          scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote()
            for n in alive]
    for node, ref in zip(alive, refs):
        where = f"Ray node {node.get('NodeManagerAddress')} ({node['NodeID'][:12]})"
        try:
            here = ray.get(ref, timeout=PROBE_TIMEOUT)
        except ray.exceptions.GetTimeoutError:
            raise UsageError(f"{where} did not run a probe task within {PROBE_TIMEOUT:g} s") from None
        except ray.exceptions.RuntimeEnvSetupError as exc:
            raise UsageError(f"{where} could not set the project up: {_last_line(exc)}") from None
        except Exception as exc:  # noqa: BLE001
            raise UsageError(f"{where} could not run a probe task: {exception_line(exc)}") from None
        why = version_mismatch(versions, here)
        if why:
            raise UsageError(f"{where} cannot run this run's trials: {why}")


def _last_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


# -- the driver's side of the pool ---------------------------------------------------------------


@dataclass(eq=False)
class _Worker:
    shape: WorkerShape
    handle: Any
    host: str | None = None
    pid: int | None = None
    ready: bool = False
    alive: bool = True  # starting or ready; False once dead or given up
    free: int = 0


class _Pool:
    """One run's scheduling state, on the driver's event loop, over the executor's workers."""

    def __init__(self, executor: RayExecutor, specs: Iterator[TrialSpec], sink: TrialSink, stop: asyncio.Event):
        self.x, self.ray = executor, executor.ray
        self.specs, self.sink, self.stop = specs, sink, stop
        self.retries: deque[TrialSpec] = deque()
        self.in_flight: dict[tuple[str, str, int], TrialSpec] = {}
        self.exhausted = False
        self.changed = asyncio.Event()
        self.tasks: set[asyncio.Future[Any]] = set()
        self.replacements = REPLACEMENTS_PER_WORKER * len(executor.shapes)
        self.last_loss = ""

    @property
    def workers(self) -> list[_Worker]:
        return self.x.workers

    # -- workers --------------------------------------------------------------------------

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _await_ready(self, worker: _Worker) -> None:
        try:
            info = await asyncio.wait_for(asyncio.wrap_future(worker.handle.ready.remote().future()), START_TIMEOUT)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a worker that cannot start is reported and dropped
            reason = (f"it was not placed within {START_TIMEOUT:g} s" if isinstance(exc, asyncio.TimeoutError)
                      else _last_line(exc))
            self._retire(worker, f"a worker could not start on Ray: {reason}", f"the last could not start: {reason}")
        else:
            worker.host, worker.pid = info["host"], info["pid"]
            worker.ready, worker.free = True, worker.shape.slots
        self.changed.set()

    def _retire(self, worker: _Worker, message: str, loss: str) -> None:
        """Drop a worker: say so on stderr (``message``); ``loss`` is why, for the trials that no
        worker is left to run."""
        if not worker.alive:
            return
        worker.alive = False
        self.last_loss = loss
        print(f"anpord: {message}", file=sys.stderr)
        with contextlib.suppress(Exception):  # already gone
            self.ray.kill(worker.handle, no_restart=True)

    # -- scheduling -----------------------------------------------------------------------

    async def run(self) -> None:
        for worker in self.workers:
            self._spawn(self._await_ready(worker))
        while True:
            self.changed.clear()
            self._dispatch()
            if not self.retries and not self.in_flight and (self.exhausted or self.stop.is_set()):
                return
            if not any(w.alive for w in self.workers) and not self.in_flight:
                # (Trials still in flight on a dead worker come back as retries first.)
                self._give_up()
                return
            await self.changed.wait()

    def _take(self, n: int) -> list[TrialSpec]:
        batch: list[TrialSpec] = []
        while len(batch) < n and self.retries:
            batch.append(self.retries.popleft())
        while len(batch) < n and not self.exhausted and not self.stop.is_set():
            spec = next(self.specs, None)
            if spec is None:
                self.exhausted = True
            else:
                batch.append(spec)
        return batch

    def _dispatch(self) -> None:
        for worker in self.workers:
            if not (worker.ready and worker.alive and worker.free > 0):
                continue
            batch = self._take(worker.free)
            if not batch:
                return
            worker.free -= len(batch)
            self.x.stats["batches"] += 1
            for spec in batch:
                self.in_flight[spec.key] = spec
                if spec.attempt == 0:  # a retry was announced the first time
                    self.sink.trial_started(spec)
            self._spawn(self._consume(worker, batch))

    async def _consume(self, worker: _Worker, batch: list[TrialSpec]) -> None:
        pending = {spec.key: spec for spec in batch}
        try:
            async for ref in worker.handle.run.remote(batch):
                finished, logs = await ref
                self.x.stats["messages"] += 1
                for key, message in logs:
                    spec = self.in_flight.get(key)
                    if spec is not None:
                        self.sink.trial_log(spec, message)
                for key, record, events in finished:
                    spec = pending.pop(key, None)
                    if spec is None:
                        continue
                    del self.in_flight[key]
                    worker.free += 1
                    self.x.stats["trials"] += 1
                    self.sink.trial_finished(spec, *trial_from_wire(record, events))
                self.changed.set()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the worker is lost: its trials run elsewhere
            died = isinstance(exc, self.ray.exceptions.RayActorError)
            self._lost(worker, pending, "died" if died else f"failed: {exception_line(exc)}")
            if died and worker.alive:
                self._retire(worker, f"the Ray worker on {worker.host} died; its trials run again on another "
                                     "worker (once: a trial that loses its worker twice is void)",
                             f"the last, on {worker.host}, died")
                if self.replacements > 0:  # wherever there is room: its node may be gone
                    self.replacements -= 1
                    self._spawn(self._await_ready(self.x.start_worker(replace(worker.shape, node_id=None))))
        else:
            if pending:  # the stream ended without them: never silently
                self._lost(worker, pending, "returned no result")
        self.changed.set()

    def _lost(self, worker: _Worker, pending: dict[tuple[str, str, int], TrialSpec], what: str) -> None:
        """The trials of a lost batch: a first attempt runs again, a second is void."""
        worker.free += len(pending)
        for key, spec in pending.items():
            self.in_flight.pop(key, None)
            if spec.attempt == 0:
                self.retries.append(replace(spec, attempt=1))
            else:
                self._void(spec, f"its Ray worker {what}, on both attempts (the second on {worker.host})",
                           worker.host)
        pending.clear()

    def _void(self, spec: TrialSpec, reason: str, host: str | None) -> None:
        from ._local import _unrunnable

        self.sink.trial_finished(spec, _unrunnable(spec, reason, host), [])

    def _give_up(self) -> None:
        """No worker is left (none could start, or every one died past the replacements): what
        was taken is void with the reason, and so is what was not yet, unless the run stopped."""
        reason = f"no Ray worker is left to run it ({self.last_loss or 'none started'})"
        while self.retries:
            self._void(self.retries.popleft(), reason, None)
        while not self.exhausted and not self.stop.is_set():
            spec = next(self.specs, None)
            if spec is None:
                self.exhausted = True
            else:
                self.sink.trial_started(spec)
                self._void(spec, reason, None)

    async def close(self) -> None:
        """Stop consuming, and let every worker cancel its trials (their sandboxes close) and tear
        its harnesses down; the executor ends the actors after."""
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.wait(self.tasks)
        live = [w for w in self.workers if w.alive and w.ready]
        if live:
            closes = [asyncio.wrap_future(w.handle.close.remote().future()) for w in live]
            done, late = await asyncio.wait(closes, timeout=CLOSE_TIMEOUT)
            for f in done:
                f.exception()  # a worker that died meanwhile: it is ended all the same
            for f in late:
                f.cancel()
