"""Sandbox overhead: per-trial set-up and tear-down of the ``local`` and ``bwrap`` sandboxes.

    python bench/sandbox_overhead.py [--trials 200] [--files 200] [--tmp DIR]

One trial = open an instance whose workspace is filled from a 200-file ``directory()`` source
(small text files in nested folders, as a code fixture looks), spawn ``true`` in it (the agent that
does nothing), wait for it, kill what is left of its tree, close the instance (every process
killed, every file removed). Trials run one after another; the figure is wall-clock ms per trial
(median and mean over the trials, after a warm-up), printed beside its target and the ratio.

Trial folders go where a run puts them (``default_tmp_root()``: /dev/shm when it is a roomy
tmpfs, unless ``$ANPORD_SANDBOX_TMP`` or ``$TMPDIR`` say otherwise); ``--tmp DIR`` measures another
place, e.g. ``--tmp /var/tmp`` for a disk (the fixture itself always stays on disk).

Targets: ≤ 15 ms per trial for ``local``, ≤ 30 ms for ``bwrap`` (both far below a model call).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

TARGETS_MS = {"local": 15.0, "bwrap": 30.0}


def make_fixture(root: Path, count: int) -> Path:
    fixture = root / "fixture"
    for i in range(count):
        path = fixture / f"pkg{i % 10}" / f"sub{i % 4}" / f"module_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# module {i}\n" + "def f():\n    return 1\n" * 20)
    return fixture


async def one_trial(sandbox: object, spec: object) -> float:
    started = time.perf_counter()
    inst = await sandbox.open(spec)  # type: ignore[attr-defined]
    try:
        proc = await inst.spawn(["true"], env=inst.environment())
        from anpord.sandboxes._proc import exit_code, wait_exit

        await wait_exit(proc)
        await inst.kill_tree(proc)
        await exit_code(proc)
    finally:
        await inst.close()
    return (time.perf_counter() - started) * 1000


async def measure(kind: str, trials: int, fixture: Path, tmp_root: Path) -> list[float]:
    from anpord import directory
    from anpord.authoring import Variant
    from anpord.sandboxes import SandboxSpec, get_sandbox

    sandbox = get_sandbox(kind)
    sandbox.tmp_root = tmp_root  # type: ignore[attr-defined]
    spec = SandboxSpec(Variant(sandbox=kind), directory(str(fixture)), fixture.parent)
    for _ in range(5):  # warm-up: imports, the bwrap probe, page cache
        await one_trial(sandbox, spec)
    return [await one_trial(sandbox, spec) for _ in range(trials)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--tmp", help="where trial folders go (default: where a run puts them)")
    args = parser.parse_args()
    from anpord.sandboxes._instance import default_tmp_root

    place = args.tmp or default_tmp_root() or tempfile.gettempdir()
    with (
        tempfile.TemporaryDirectory(prefix="anpord-bench-", dir="/var/tmp") as tmp,
        tempfile.TemporaryDirectory(prefix="anpord-bench-roots-", dir=place) as roots_dir,
    ):
        fixture = make_fixture(Path(tmp), args.files)
        roots = Path(roots_dir)
        print(
            f"per-trial set-up + tear-down, {args.files}-file directory() source, `true` agent, "
            f"{args.trials} trials each, trial folders in {place}"
        )
        worst = 0.0
        for kind, target in TARGETS_MS.items():
            times = asyncio.run(measure(kind, args.trials, fixture, roots))
            median, mean = statistics.median(times), statistics.fmean(times)
            ratio = median / target
            worst = max(worst, ratio)
            print(
                f"  {kind:6} median {median:6.2f} ms/trial  mean {mean:6.2f}  p95 "
                f"{sorted(times)[int(len(times) * 0.95) - 1]:6.2f}   target ≤ {target:g} ms  "
                f"ratio {ratio:.2f} ({'met' if ratio <= 1 else 'MISSED'})"
            )
            left = list(roots.iterdir())
            if left:
                print(f"  {kind}: {len(left)} instance folders were left behind", file=sys.stderr)
                return 1
    return 0 if worst <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
