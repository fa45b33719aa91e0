"""Docker sandbox cost: per-trial set-up and tear-down of a container, beside bwrap's.

    python bench/docker_sandbox.py [--trials 40] [--many 100] [--concurrency 8] [--image IMAGE]

1. **Per trial**, one after another (after a warm-up): set-up = ``open`` (a folder, a container
   started), run = spawn ``true`` in it and wait, tear-down = ``close`` (the container removed,
   the folder gone). Median and p95 of each, for ``docker`` and for ``bwrap``.
2. **Many at once**: ``--many`` trials (open, ``true``, close) at ``--concurrency`` at a time:
   wall time, and that nothing is left (no container with the ``anpord.sandbox`` label, running
   or not, and no instance folder).

The image is ``--image``, else one made from this machine's bash and coreutils (``<cli> import``
of a tarball: no registry needed), kept for later runs. The container CLI is the one the sandbox
picks (``$ANPORD_CONTAINER_CLI``, else docker if its daemon answers, else podman).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

PROGRAMS = ("bash", "sleep", "true", "cat", "ls")


def host_image() -> str:
    from anpord.sandboxes._container import LABEL, find_cli

    cli = find_cli()
    programs = [f"/usr/bin/{p}" for p in PROGRAMS]
    ldd = subprocess.run(["ldd", *programs], capture_output=True, text=True).stdout
    libs = {w for w in ldd.split() if w.startswith("/") and os.path.exists(w)}
    members = sorted({*programs, *libs})
    name = "localhost/anpord-bench:" + hashlib.sha256("\n".join(members).encode()).hexdigest()[:12]
    if cli.run_sync("image", "inspect", "--format", "{{.Id}}", name).returncode == 0:
        return name
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in members:
            tar.add(os.path.realpath(path), arcname=path.lstrip("/"))
        info = tarfile.TarInfo("tmp")
        info.type, info.mode = tarfile.DIRTYPE, 0o1777
        tar.addfile(info)
    subprocess.run([cli.path, "import", "--change", f"LABEL {LABEL}=1", "-", name],
                   input=buffer.getvalue(), check=True, capture_output=True, env=cli.env)
    return name


async def one_trial(sandbox: object, spec: object) -> tuple[float, float, float]:
    from anpord.sandboxes._proc import exit_code, wait_exit

    t0 = time.perf_counter()
    inst = await sandbox.open(spec)  # type: ignore[attr-defined]
    t1 = time.perf_counter()
    try:
        proc = await inst.spawn(["true"], env=inst.environment())
        await wait_exit(proc)
        await inst.kill_tree(proc)
        await exit_code(proc)
    finally:
        t2 = time.perf_counter()
        await inst.close()
    t3 = time.perf_counter()
    return (t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000


def _spec(kind: str, image: str) -> object:
    from anpord.authoring import Variant, files
    from anpord.sandboxes import SandboxSpec

    extra = {"image": image} if kind == "docker" else {}
    return SandboxSpec(Variant(sandbox=kind, **extra), files({"README.md": "hello\n"}))


async def sequential(kind: str, trials: int, image: str, roots: Path) -> list[tuple[float, float, float]]:
    from anpord.sandboxes import get_sandbox

    sandbox = get_sandbox(kind)
    sandbox.tmp_root = roots  # type: ignore[attr-defined]
    spec = _spec(kind, image)
    for _ in range(3):  # warm-up: imports, probes, the image check
        await one_trial(sandbox, spec)
    return [await one_trial(sandbox, spec) for _ in range(trials)]


async def many(count: int, concurrency: int, image: str, roots: Path) -> float:
    from anpord.sandboxes import get_sandbox

    sandbox = get_sandbox("docker")
    sandbox.tmp_root = roots  # type: ignore[attr-defined]
    spec = _spec("docker", image)
    gate = asyncio.Semaphore(concurrency)

    async def trial() -> None:
        async with gate:
            await one_trial(sandbox, spec)

    started = time.perf_counter()
    await asyncio.gather(*(trial() for _ in range(count)))
    return time.perf_counter() - started


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * 0.95) - 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--many", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--image")
    args = parser.parse_args()
    from anpord.sandboxes._container import LABEL, find_cli
    from anpord.sandboxes._instance import default_tmp_root

    cli = find_cli()
    image = args.image or host_image()
    place = default_tmp_root() or tempfile.gettempdir()
    print(f"container CLI {cli.path} ({cli.name}), image {image}, trial folders in {place}")
    with tempfile.TemporaryDirectory(prefix="anpord-bench-roots-", dir=place) as roots_dir:
        roots = Path(roots_dir)
        print(f"per trial, {args.trials} one after another (ms): set-up / run `true` / tear-down / total")
        for kind in ("docker", "bwrap"):
            times = asyncio.run(sequential(kind, args.trials, image, roots))
            cols = list(zip(*times))
            total = [sum(t) for t in times]
            parts = "  ".join(
                f"{label} median {statistics.median(c):7.1f} p95 {p95(list(c)):7.1f}"
                for label, c in zip(("set-up", "run", "tear-down"), cols)
            )
            print(f"  {kind:6} {parts}  total median {statistics.median(total):7.1f} p95 {p95(total):7.1f}")
        wall = asyncio.run(many(args.many, args.concurrency, image, roots))
        left = cli.run_sync("ps", "-a", "--filter", f"label={LABEL}", "--format", "{{.Names}}").stdout.split()
        folders = list(roots.iterdir())
        print(
            f"{args.many} docker trials at C={args.concurrency}: wall {wall:.1f} s "
            f"({args.many / wall:.1f} trials/s); containers left: {len(left)}, folders left: {len(folders)}"
        )
        return 1 if left or folders else 0


if __name__ == "__main__":
    sys.exit(main())
