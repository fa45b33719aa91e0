"""A real Ray cluster on this machine, for the Ray executor's tests and benchmark.

``LocalCluster(nodes)`` starts a head node (``ray start --head --block``) and one more node
process per extra entry, each on its own loopback address (127.0.0.2, 127.0.0.3, ...: Ray turns
127.0.0.1 into the machine's network address, these it keeps) and its own ports, with this
checkout's ``src`` on the workers' ``PYTHONPATH``. ``stop()`` ends every process the cluster
started — the node processes and all their descendants, frozen first so none can fork away — and
removes its temp folder; the node processes also get SIGTERM (and stop their own processes) if
the process that started them dies.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[1] / "src"
RAY = [sys.executable, "-m", "ray.scripts.scripts"]  # this interpreter's Ray, not a `ray` on PATH


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    """``count`` consecutive ports nothing listens on, below the kernel's ephemeral range (so no
    outgoing connection takes one before Ray binds it), from a random start: tests running at the
    same time rarely meet."""
    import random

    while True:
        start = random.randrange(20000, 32000 - count)
        ports = list(range(start, start + count))
        if all(_bindable(p) for p in ports):
            return ports


_LIBC = ctypes.CDLL(None, use_errno=True)  # loaded here: the child between fork and exec only calls it


def _die_with_parent() -> None:
    _LIBC.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class Node:
    num_cpus: int = 1
    resources: dict[str, float] = field(default_factory=dict)
    ip: str = ""
    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None


class LocalCluster:
    def __init__(self, nodes: list[Node], *, env: dict[str, str] | None = None):
        self.nodes = nodes
        self.temp = Path()
        self.killed: set[int] = set()
        self.port = 0
        self.address = ""
        self.env = dict(os.environ)
        self.env.update(env or {})
        self.env.update({
            "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), self.env.get("PYTHONPATH")])),
            "RAY_USAGE_STATS_ENABLED": "0",
            # Ray 2.5x's head turns token authentication on by default while a node joining it
            # (and a driver) sends no token unless told to: a cluster on loopback needs neither.
            "RAY_AUTH_MODE": "disabled",
        })

    def _start_node(self, index: int, node: Node) -> None:
        node.ip = f"127.0.0.{index + 2}"
        ports = free_ports(6 + 100)  # the node's own ports, then its workers' (one each)
        args = [
            *RAY, "start", "--block", "--disable-usage-stats",
            f"--num-cpus={node.num_cpus}", f"--node-ip-address={node.ip}",
            "--object-store-memory=80000000",
            f"--node-manager-port={ports[0]}", f"--object-manager-port={ports[1]}",
            f"--dashboard-agent-listen-port={ports[2]}", f"--dashboard-agent-grpc-port={ports[3]}",
            f"--metrics-export-port={ports[4]}", f"--runtime-env-agent-port={ports[5]}",
            f"--min-worker-port={ports[6]}", f"--max-worker-port={ports[-1]}",
        ]
        if node.resources:
            args.append(f"--resources={json.dumps(node.resources)}")
        if index == 0:
            args += ["--head", f"--port={self.port}", f"--temp-dir={self.temp}", "--include-dashboard=false"]
        else:
            args.append(f"--address={self.address}")
        node.log = self.temp / f"node{index}.log"
        with node.log.open("wb") as log:
            node.proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - it takes no lock: one libc call
            )

    def start(self, timeout: float = 120, attempts: int = 4) -> LocalCluster:
        """Start the nodes; again on fresh ports if a node fails to come up (a port taken
        meanwhile by another program on this shared machine, or a machine so loaded that a node
        misses Ray's own 30 s wait to register), then the error with their logs."""
        for attempt in range(attempts):
            # Short: Ray's unix sockets live under it, and a socket path has at most 107 bytes.
            self.temp = Path(tempfile.mkdtemp(prefix="ar-", dir="/tmp"))
            self.port = free_ports(1)[0]
            self.address = f"127.0.0.2:{self.port}"
            try:
                self._start_node(0, self.nodes[0])
                self._wait_started(self.nodes[0], timeout)
                for i, node in enumerate(self.nodes[1:], start=1):
                    self._start_node(i, node)
                for node in self.nodes[1:]:
                    self._wait_started(node, timeout)
                live = len(self.node_ids())
                if live != len(self.nodes):
                    raise RuntimeError(f"the Ray cluster has {live} live nodes, not {len(self.nodes)}:\n{self.logs()}")
                return self
            except RuntimeError:
                self.stop()
                if attempt + 1 == attempts:
                    raise
            except BaseException:
                self.stop()
                raise
        return self

    def _wait_started(self, node: Node, timeout: float) -> None:
        assert node.proc is not None and node.log is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "Ray runtime started" in node.log.read_text(errors="replace"):
                return
            if node.proc.poll() is not None:
                raise RuntimeError(f"a Ray node exited with {node.proc.returncode}:\n{self.logs()}")
            time.sleep(0.3)
        raise RuntimeError(f"a Ray node did not start within {timeout:g} s:\n{self.logs()}")

    def _alive_nodes(self) -> list[dict[str, Any]]:
        out = subprocess.run(
            [sys.executable, "-c", _COUNT_NODES, self.address], env=self.env, capture_output=True, text=True,
            timeout=60, check=False,
        )
        if out.returncode != 0:
            return []
        return list(json.loads(out.stdout.strip().splitlines()[-1]))

    def node_ids(self) -> dict[str, str]:
        """Node IP -> node id, for the live nodes."""
        return {n["NodeManagerAddress"]: n["NodeID"] for n in self._alive_nodes()}

    def logs(self) -> str:
        return "\n".join(n.log.read_text(errors="replace")[-3000:] for n in self.nodes if n.log and n.log.exists())

    def kill_node(self, index: int) -> None:
        """The node as a machine that loses power: every process of it killed at once."""
        node = self.nodes[index]
        assert node.proc is not None
        self.killed |= _freeze_and_kill({node.proc.pid})
        node.proc.wait()

    def stop(self) -> None:
        self.killed |= _freeze_and_kill({n.proc.pid for n in self.nodes if n.proc is not None and n.proc.poll() is None})
        for node in self.nodes:
            if node.proc is not None:
                node.proc.wait()
        shutil.rmtree(self.temp, ignore_errors=True)

    def left_running(self) -> set[int]:
        """Processes this cluster had that still run (not even a zombie yet)."""
        return {pid for pid in self.killed if _running(pid)}


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _freeze_and_kill(roots: set[int]) -> set[int]:
    """Freeze the processes and all their descendants, then kill them (none can fork a child the
    sweep misses) and wait until they are dead; the processes killed."""
    frozen: set[int] = set()
    while True:
        found = (_descendants(roots) | roots) - frozen
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        frozen |= found
    for pid in frozen:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in frozen) and time.monotonic() < deadline:
        time.sleep(0.05)
    return frozen


def _descendants(roots: set[int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue  # a zombie: already dead
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    out: set[int] = set()
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


_COUNT_NODES = """
import json, logging, sys, ray
ray.init(address=sys.argv[1], logging_level=logging.ERROR, log_to_driver=False)
print(json.dumps([n for n in ray.nodes() if n["Alive"]], default=str))
"""
