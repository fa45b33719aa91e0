"""Planning a run: which cells (case × variant) run, with how many trials and what timeout.

Every precedence rule lives here, so it is applied in one place (DESIGN §6): the command line
over the eval's own settings (the case, then its suite) over the config. Variants: the suite's,
else the config's, else one default variant; ``--harness`` replaces them with one variant on the
first selected variant's machine and profile (its agent settings too when the new harness is the
same kind); ``--model``/``--sandbox``/``--profile``/``--network`` override that field on each,
``--secret``/``--env``/``--mount`` add to it; the config fills what a variant leaves unset; a
coding CLI's own key variables that are set join its secrets. That resolution runs once per
distinct list of declared variants, not once per case: a 10,000-case suite shares one list. The
judge model comes from the case's ``judge=``, else the config's ``JudgeConfig`` (a judge call's own
``model=`` wins over both).
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from .._errors import UsageError
from ..stats._trial_count import parse_trials
from ..authoring._config import EvalConfig, JudgeConfig, Variant
from ..harnesses import Harness, HarnessSpecError, resolve_harness
from .discovery import Case, Project, _rel

__all__ = ["FAIL_ON", "RunOptions", "PlannedCase", "Plan", "build_plan", "case_hash", "trial_seed"]

FAIL_ON = ("failures", "strict", "regressed", "never")


@dataclass
class RunOptions:
    """What the command line (or a caller of ``execute``) asks of a run."""

    trials: int | str | None = None  # N, "auto" or "MIN..MAX" (adaptive: stats/_adaptive.py)
    timeout: float | None = None
    max_concurrency: int | None = None
    variants: Sequence[str] = ()
    harness: str | None = None
    model: str | None = None
    sandbox: str | None = None
    fail_on: str = "failures"
    artifacts: bool = True
    cache: bool = False
    replay: str | None = None  # ``--replay RUN``: the run folder the model proxies answer from
    executor: str | None = None
    ray_address: str | None = None
    history: bool = True  # file the run in the run store (needs artifacts)
    compare: bool = False  # compare each cell with its baseline at the end (needs history)
    regression_threshold: float = 0.2  # the margin within which a cell's change is "unchanged"
    alpha: float = 0.05  # the comparison's chance of any false regression (docs/statistics.md)
    variant_margin: float = 0.05  # the margin within which a variant's change is "unchanged"
    rerun_of: str | None = None  # the run whose failed trials this run re-runs
    kind: str | None = None  # what made the run when not eval/rerun/cached (``audit``): RunRecord.kind
    regrade_of: str | None = None  # the run a regrade re-decides
    snapshots: bool = True  # keep each trial's workspace at its end in the run folder (``--no-snapshots``)
    # The variant fields on the command line (``--secret``, ``--env``, ``--profile``,
    # ``--network``, ``--mount``): applied to every selected variant, kept by ``--harness``.
    secrets: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    profile: str | None = None
    network: bool = False
    mounts: Sequence[str] = ()
    # Per trial (``--token-limit``/``--cost-limit``) and per run (``--max-run-cost``): see _limits.
    token_limit: int | None = None
    cost_limit: float | None = None
    max_run_cost: float | None = None


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
    # Adaptive trials (``--trials auto``, ``MIN..MAX``): MIN..MAX; ``trials`` is then MAX, the
    # most the cell may take, and the allocator decides how many it does.
    adaptive: tuple[int, int] | None = None
    token_limit: int | None = None  # per trial, resolved (see limits_of)
    cost_limit: float | None = None

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


def _declared(declared: Sequence[Variant], project: Project) -> list[Variant]:
    """A case's variants as declared, with the config's defaults filled in."""
    cfg = project.config
    variants = [
        v.with_defaults(cfg.harness, cfg.model, cfg.sandbox)
        for v in (declared or cfg.variants or (Variant(),))
    ]
    if cfg.mocks:  # the config's mocks, under each variant's own of the same name
        from ..mocks._declare import merge_mocks

        variants = [replace(v, mocks=merge_mocks(cfg.mocks, v.mocks)) for v in variants]
    return variants


def _resolve_variants(
    declared: Sequence[Variant], project: Project, opts: RunOptions, selected: set[str] | None = None
) -> list[Variant]:
    cfg = project.config
    variants = _declared(declared, project)
    if opts.harness:
        # One variant with the new harness, on the first selected variant's settings.
        chosen = [v for v in variants if selected is None or v.label in selected]
        if not chosen:
            return []
        variants = [_switched(chosen[0], opts.harness).with_defaults(None, cfg.model, cfg.sandbox)]
    out = [_with_own_secrets(_with_flags(v, opts)) for v in variants]
    labels = [v.label for v in out]
    dups = sorted({x for x in labels if labels.count(x) > 1})
    if dups:
        raise UsageError(f"several variants share the label {', '.join(dups)}; give them name=")
    return out


def _kind(spec: str | None) -> str:
    """What kind of agent a spec runs: its scheme (``openai``, ``python``, ``http``) or coding
    CLI (``claude`` for ``claude:/opt/claude``)."""
    return (spec or "").partition(":")[0]


def _switched(base: Variant, harness: str) -> Variant:
    """``base`` on another harness. Where and how it ran (sandbox, network, env, secrets, mounts)
    and its profile describe the machine and the setup, and are kept; its model and options are
    the agent's own, kept only when the new harness is of the same kind (``claude`` →
    ``claude:/opt/claude/bin/claude``), less an ``executable`` option the new spec replaces."""
    same = _kind(base.harness) == _kind(harness)
    options = dict(base.options) if same else {}
    if same and ":" in harness:
        options.pop("executable", None)
    return replace(
        base, harness=harness, name=None, model=base.model if same else None, options=options
    )


def _with_flags(v: Variant, opts: RunOptions) -> Variant:
    changes: dict[str, object] = {}
    if opts.model is not None:
        changes["model"] = opts.model
    if opts.sandbox is not None:
        changes["sandbox"] = opts.sandbox
    if opts.profile is not None:
        changes["profile"] = opts.profile
    if opts.network:
        changes["network"] = True
    if opts.secrets:
        changes["secrets"] = tuple(dict.fromkeys([*v.secrets, *opts.secrets]))
    if opts.env:
        changes["env"] = {**v.env, **opts.env}
    if opts.mounts:
        changes["mounts"] = tuple(dict.fromkeys([*v.mounts, *opts.mounts]))
    return replace(v, **changes) if changes else v  # type: ignore[arg-type]


def _with_own_secrets(v: Variant) -> Variant:
    """A coding CLI's own key variables, when set here, pass to its trials as secrets."""
    from ..harnesses import CODING_AGENTS

    if (v.harness or "").partition(":")[0] not in CODING_AGENTS:
        return v  # no CLI of its own (and the CLIs' modules stay unloaded)
    from ..harnesses.coding import own_secrets

    names = [n for n in own_secrets(v.harness, v.model) if os.environ.get(n) and n not in v.secrets]
    return replace(v, secrets=(*v.secrets, *names)) if names else v


def _select_variants(
    wanted: Sequence[str], variants: Sequence[Variant], targets: Sequence[str] | None = None
) -> set[str] | None:
    """``--variant`` values to labels. A value is a full label, or a variant's name, model,
    harness or profile when that names exactly one label; otherwise exit 2 listing the labels.
    ``targets[i]`` is the label that matching ``variants[i]`` selects (its own by default: a
    variant as declared selects the variant the command line's flags made of it)."""
    if not wanted:
        return None
    pairs = list(zip(variants, targets if targets is not None else [v.label for v in variants]))
    labels: dict[str, str] = {}
    for v, target in pairs:
        labels.setdefault(v.label, target)
    listing = ", ".join(dict.fromkeys(t for _, t in pairs)) or "none"
    chosen: set[str] = set()
    for w in wanted:
        if w in labels:
            chosen.add(labels[w])
            continue
        hits = sorted({t for v, t in pairs if w in (v.name, v.model, v.harness, v.profile)})
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


def limits_of(opts: RunOptions, case: Case, variant: Variant, cfg: EvalConfig
              ) -> tuple[int | None, float | None]:
    """A cell's token and cost limits per trial: the command line, then the case's own, then
    its suite's, then the variant's, then the config's; each limit on its own (a case may set
    one and leave the other to its variant)."""
    ev, suite = case.eval, case.suite
    return (
        next((x for x in (opts.token_limit, ev.token_limit, suite.token_limit if suite else None,
                          variant.token_limit, cfg.token_limit) if x is not None), None),
        next((x for x in (opts.cost_limit, ev.cost_limit, suite.cost_limit if suite else None,
                          variant.cost_limit, cfg.cost_limit) if x is not None), None),
    )


def _check_mock_env(case: Case, variant: Variant) -> None:
    """Mocks declared at different levels (config, variant, suite, case) whose URLs would be one
    variable: one would be out of the agent's reach, so the run stops first, naming the file."""
    suite = case.suite.mocks if case.suite is not None else ()
    if not (variant.mocks or suite or case.eval.mocks):
        return
    from ..mocks._declare import env_clash, merge_mocks

    clash = env_clash(merge_mocks(variant.mocks, suite, case.eval.mocks))
    if clash is not None:
        raise UsageError(f"{_rel(case.file.path)}: {case.id}: the trial's mocks have {clash}")


def build_plan(project: Project, cases: Sequence[Case], opts: RunOptions, *, resolve: bool = True) -> Plan:
    """The cells to run. ``resolve`` also resolves every harness spec and sandbox name now, so a
    bad one is exit 2 before anything runs."""
    cfg = project.config
    # With --harness, --variant picks the declared variant whose settings the new one keeps.
    base: set[str] | None = None
    if opts.harness:
        lists = {id(case.variants): case.variants for case in cases}
        base = _select_variants(
            opts.variants, [v for vs in lists.values() for v in _declared(vs, project)]
        )
    memo: dict[int, list[Variant]] = {}
    per_case: list[tuple[Case, list[Variant]]] = []
    for case in cases:
        declared = case.variants
        key = id(declared)  # cases of one suite (or of none) share one tuple object
        if key not in memo:
            try:
                memo[key] = _resolve_variants(declared, project, opts, base)
            except UsageError as exc:
                raise UsageError(f"{case.id}: {exc}") from None
        per_case.append((case, memo[key]))
    selected = None
    if not opts.harness and opts.variants:
        # A value may name a variant as the run labels it, or as it was declared (before
        # --model, --profile... changed its label).
        lists = {id(case.variants): case.variants for case in cases}
        resolved = [v for key in lists for v in memo[key]]
        declared = [v for vs in lists.values() for v in _declared(vs, project)]  # type: ignore[assignment]
        selected = _select_variants(
            opts.variants, [*resolved, *declared], [v.label for v in (*resolved, *resolved)]
        )
    cells: list[PlannedCase] = []
    for case, variants in per_case:
        if selected is not None:
            variants = [v for v in variants if v.label in selected]
        ev, suite = case.eval, case.suite
        trials = opts.trials or ev.trials or (suite.trials if suite else None) or cfg.trials
        try:
            parsed = parse_trials(trials)
        except ValueError as exc:
            raise UsageError(f"{case.id}: trials: {exc}") from None
        adaptive = parsed if isinstance(parsed, tuple) else None
        trials = parsed[1] if isinstance(parsed, tuple) else parsed
        timeout = opts.timeout or ev.timeout or (suite.timeout if suite else None) or cfg.timeout
        judge = ev.judge if isinstance(ev.judge, JudgeConfig) else cfg.judge
        if isinstance(ev.judge, str):  # judge="model-id": the config's judge with another model
            judge = replace(cfg.judge or JudgeConfig(), model=ev.judge)
        chash = case_hash(case) if variants else ""
        for v in variants:
            _check_mock_env(case, v)
            tokens, cost = limits_of(opts, case, v, cfg)
            cells.append(PlannedCase(case, v, trials, float(timeout), judge, chash, adaptive=adaptive,
                                     token_limit=tokens, cost_limit=cost))
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
