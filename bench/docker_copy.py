"""The docker sandbox binding its folders against copying them (``ANPORD_CONTAINER_COPY=1``).

    python bench/docker_copy.py [--trials 20] [--files 50] [--image IMAGE]

Per trial, the two modes interleaved (bind, copy, bind, copy, ...) after a warm-up: set-up
(``open`` of a workspace of ``--files`` small files), a harness-sized write (``write_file`` of a
prompt), one command (``exec true``), the checks' view (``workspace_view``) and tear-down
(``close``). Median and p95 of each in ms, and the CPU time (user+sys, this process and the CLI
processes it ran) per trial. The image is the one ``bench/docker_sandbox.py`` makes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

STEPS = ("set-up", "write", "exec", "view", "tear-down")


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


async def one(image: str, roots: Path, files_count: int, copy: bool) -> tuple[list[float], float]:
    from anpord.authoring import Variant, files
    from anpord.sandboxes import SandboxSpec
    from anpord.sandboxes.docker import COPY_ENV, DockerSandbox

    if copy:
        os.environ[COPY_ENV] = "1"
    else:
        os.environ.pop(COPY_ENV, None)
    source = files({f"src/f{i}.txt": f"line {i}\n" * 20 for i in range(files_count)})
    spec = SandboxSpec(Variant(sandbox="docker", image=image), source)
    cpu0, marks = _cpu(), [time.perf_counter()]
    inst = await DockerSandbox(tmp_root=roots).open(spec)
    marks.append(time.perf_counter())
    try:
        await inst.write_file(inst.state_dir / "sessions" / "s" / "prompt.txt", b"do the task\n" * 100)
        marks.append(time.perf_counter())
        done = await inst.exec("true")
        assert done.ok, done
        marks.append(time.perf_counter())
        view = await inst.workspace_view()
        assert len(list((view / "src").iterdir())) == files_count
        marks.append(time.perf_counter())
    finally:
        await inst.close()
    marks.append(time.perf_counter())
    return [(b - a) * 1000 for a, b in zip(marks, marks[1:])], _cpu() - cpu0


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * 0.95) - 1)]


async def main_async(args: argparse.Namespace) -> None:
    from docker_sandbox import host_image

    image = args.image or host_image()
    got: dict[bool, list[tuple[list[float], float]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory(prefix="anpord-bench-roots-") as roots_dir:
        roots = Path(roots_dir)
        for copy in (False, True, False, True):  # warm-up
            await one(image, roots, args.files, copy)
        for _ in range(args.trials):
            for copy in (False, True):
                got[copy].append(await one(image, roots, args.files, copy))
    print(f"{args.trials} trials per mode, interleaved; workspace of {args.files} files (ms)")
    medians = {}
    for copy, rows in got.items():
        cols = list(zip(*[r[0] for r in rows]))
        total = [sum(r[0]) for r in rows]
        cpu = [r[1] * 1000 for r in rows]
        medians[copy] = (statistics.median(total), statistics.median(cpu))
        parts = "  ".join(f"{n} {statistics.median(c):6.1f}/{p95(list(c)):6.1f}" for n, c in zip(STEPS, cols))
        print(f"  {'copy' if copy else 'bind':4}  {parts}  total {statistics.median(total):6.1f}/{p95(total):6.1f}"
              f"  cpu {statistics.median(cpu):6.1f}")
    print(f"copy/bind: wall x{medians[True][0] / medians[False][0]:.2f}, cpu x{medians[True][1] / medians[False][1]:.2f}"
          " (medians; each cell median/p95)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--image")
    asyncio.run(main_async(parser.parse_args()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
