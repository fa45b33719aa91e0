"""Planning a run: which cells (case × variant) run, with how many trials and what timeout.

Every precedence rule lives here, so it is applied in one place (DESIGN §6): the command line
over the eval's own settings (the case, then its suite) over the config. Variants: the suite's,
else the config's, else one default variant; ``--harness`` replaces them with one variant on the
same machine settings; ``--model``/``--sandbox`` override that field on each; the config fills
what a variant leaves unset. That resolution runs once per distinct list of declared variants, not
once per case: a 10,000-case suite shares one list. The judge model comes from the case's
``judge=``, else the config's ``JudgeConfig`` (a judge call's own ``model=`` wins over both).
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from .._errors import UsageError
from ..authoring._config import JudgeConfig, Variant
from ..harnesses import Harness, HarnessSpecError, resolve_harness
from .discovery import Case, Project

__all__ = ["FAIL_ON", "RunOptions", "PlannedCase", "Plan", "build_plan", "case_hash", "trial_seed"]

FAIL_ON = ("failures", "strict", "regressed", "never")


@dataclass
class RunOptions:
    """What the command line (or a caller of ``execute``) asks of a run."""

    trials: int | None = None
    timeout: float | None = None
    max_concurrency: int | None = None
    variants: Sequence[str] = ()
    harness: str | None = None
    model: str | None = None
    sandbox: str | None = None
    fail_on: str = "failures"
    artifacts: bool = True
    cache: bool = False
    executor: str | None = None
    ray_address: str | None = None
    history: bool = True  # file the run in the run store (needs artifacts)
    compare: bool = False  # compare each cell with its baseline at the end (needs history)
    regression_threshold: float = 0.2  # the margin within which a cell's change is "unchanged"
    alpha: float = 0.05  # the comparison's chance of any false regression (docs/statistics.md)
    variant_margin: float = 0.05  # the margin within which a variant's change is "unchanged"
    rerun_of: str | None = None  # the run whose failed trials this run re-runs


@dataclass
class PlannedCase:
    """One cell: a case on a resolved variant, with its trials and timeout."""

    case: Case
    variant: Variant
    trials: int
    timeout: float
    judge: JudgeConfig | None = None
    case_hash: str = ""
    indices: tuple[int, ...] | None = None  # only these of the trials run (a re-run); None: all

    @property
    def planned(self) -> tuple[int, ...] | range:
        return self.indices if self.indices is not None else range(self.trials)


@dataclass
class Plan:
    project: Project
    cells: list[PlannedCase]
    harnesses: dict[str, Harness] = field(default_factory=dict)
    max_concurrency: int = 8
    max_sandboxes: int | None = None
    executor: str = "local"

    @property
    def variant_labels(self) -> list[str]:
        return list(dict.fromkeys(c.variant.label for c in self.cells))

    @property
    def variants(self) -> list[Variant]:
        seen: dict[str, Variant] = {}
        for c in self.cells:
            seen.setdefault(c.variant.label, c.variant)
        return list(seen.values())

    @property
    def total_trials(self) -> int:
        return sum(len(c.planned) for c in self.cells)


def _resolve_variants(declared: Sequence[Variant], project: Project, opts: RunOptions) -> list[Variant]:
    cfg = project.config
    declared = list(declared or cfg.variants or (Variant(),))
    if opts.harness:
        # One variant with the new harness. It keeps where and how the first declared variant
        # ran (sandbox, network, env, secrets, mounts): those describe the machine, not the agent.
        first = declared[0]
        declared = [replace(first, harness=opts.harness, model=None, name=None, profile=None, options={})]
    out = []
    for v in declared:
        v = v.with_defaults(cfg.harness, cfg.model, cfg.sandbox)
        if opts.model is not None:
            v = replace(v, model=opts.model)
        if opts.sandbox is not None:
            v = replace(v, sandbox=opts.sandbox)
        out.append(v)
    labels = [v.label for v in out]
    dups = sorted({x for x in labels if labels.count(x) > 1})
    if dups:
        raise UsageError(f"several variants share the label {', '.join(dups)}; give them name=")
    return out


def _select_variants(wanted: Sequence[str], variants: Sequence[Variant]) -> set[str] | None:
    """``--variant`` values to labels. A value is a full label, or a variant's name, model,
    harness or profile when that names exactly one label; otherwise exit 2 listing the labels."""
    if not wanted:
        return None
    labels: dict[str, Variant] = {}
    for v in variants:
        labels.setdefault(v.label, v)
    listing = ", ".join(labels) or "none"
    chosen: set[str] = set()
    for w in wanted:
        if w in labels:
            chosen.add(w)
            continue
        hits = sorted(label for label, v in labels.items() if w in (v.name, v.model, v.harness, v.profile))
        if not hits:
            raise UsageError(f"unknown variant {w}; the variants are: {listing}")
        if len(hits) > 1:
            raise UsageError(f"ambiguous variant {w}: it names {', '.join(hits)}; give a full label")
        chosen.add(hits[0])
    return chosen


_file_digests: dict[str, bytes] = {}


def case_hash(case: Case) -> str:
    """A digest of what defines a case: its eval file's bytes, its id and its dataset row. A
    changed hash makes a comparison with an older run of the cell say the case changed."""
    path = str(case.file.path)
    digest = _file_digests.get(path)
    if digest is None:
        try:
            digest = hashlib.sha256(case.file.path.read_bytes()).digest()
        except OSError:
            digest = b""
        _file_digests[path] = digest
    h = hashlib.sha256(digest)
    h.update(case.id.encode("utf-8", "surrogatepass"))
    if case.has_row:
        from ..results._encode import encode

        h.update(encode(case.row))
    return h.hexdigest()[:16]


def trial_seed(case_id: str, variant: str, trial: int) -> int:
    """A stable seed per trial (the same in every run), for harnesses and judges that pass one to
    a model: repeated trials differ, a re-run of the same trial does not. (CRC-32: a seed needs
    spreading, not secrecy, and it is computed for every trial.)"""
    return zlib.crc32(f"{case_id}\0{variant}\0{trial}".encode("utf-8", "surrogatepass")) & 0x7FFFFFFF


def build_plan(project: Project, cases: Sequence[Case], opts: RunOptions, *, resolve: bool = True) -> Plan:
    """The cells to run. ``resolve`` also resolves every harness spec and sandbox name now, so a
    bad one is exit 2 before anything runs."""
    cfg = project.config
    memo: dict[int, list[Variant]] = {}
    per_case: list[tuple[Case, list[Variant]]] = []
    for case in cases:
        declared = case.variants
        key = id(declared)  # cases of one suite (or of none) share one tuple object
        if key not in memo:
            try:
                memo[key] = _resolve_variants(declared, project, opts)
            except UsageError as exc:
                raise UsageError(f"{case.id}: {exc}") from None
        per_case.append((case, memo[key]))
    all_variants = {id(vs): vs for _, vs in per_case}
    selected = _select_variants(opts.variants, [v for vs in all_variants.values() for v in vs])
    cells: list[PlannedCase] = []
    for case, variants in per_case:
        if selected is not None:
            variants = [v for v in variants if v.label in selected]
        ev, suite = case.eval, case.suite
        trials = opts.trials or ev.trials or (suite.trials if suite else None) or cfg.trials
        timeout = opts.timeout or ev.timeout or (suite.timeout if suite else None) or cfg.timeout
        judge = ev.judge if isinstance(ev.judge, JudgeConfig) else cfg.judge
        if isinstance(ev.judge, str):  # judge="model-id": the config's judge with another model
            judge = replace(cfg.judge or JudgeConfig(), model=ev.judge)
        chash = case_hash(case) if variants else ""
        for v in variants:
            cells.append(PlannedCase(case, v, trials, float(timeout), judge, chash))
    plan = Plan(
        project=project,
        cells=cells,
        max_concurrency=opts.max_concurrency or cfg.max_concurrency,
        max_sandboxes=cfg.max_sandboxes,
        executor=opts.executor or cfg.executor,
    )
    if resolve:
        for variant in plan.variants:
            spec = variant.harness
            if spec and spec not in plan.harnesses:
                try:
                    plan.harnesses[spec] = resolve_harness(spec, project.folder)
                except HarnessSpecError as exc:
                    raise UsageError(str(exc)) from None
            _check_sandbox(variant.sandbox or "local")
    return plan


def _check_sandbox(name: str) -> None:
    from ..sandboxes import get_sandbox

    try:
        get_sandbox(name)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
