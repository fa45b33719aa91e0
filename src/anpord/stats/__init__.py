"""Statistics for pass rates: intervals for cells and variants, paired comparisons, confidence
sequences and planning. Pure functions over counts, returning typed records (docs/statistics.md).

Names are loaded lazily: a run reporting its intervals does not load the paired comparison, the
flakiness estimate or the planner until something asks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

_EXPORTS = {
    "CONFIDENCE": "._estimate",
    "CellEstimate": "._estimate",
    "Interval": "._estimate",
    "VariantEstimate": "._estimate",
    "estimate_cell": "._estimate",
    "estimate_variant": "._estimate",
    "wilson": "._estimate",
    "FlakeEstimate": "._flaky",
    "Reading": "._flaky",
    "flake_estimate": "._flaky",
    "Plan": "._plan",
    "plan_variant": "._plan",
    "ConfidenceSequence": "._sequence",
    "ALPHA": "._paired",
    "CELL_MARGIN": "._paired",
    "VARIANT_MARGIN": "._paired",
    "CellChange": "._paired",
    "Counts": "._paired",
    "Pair": "._paired",
    "PairedComparison": "._paired",
    "VariantChange": "._paired",
    "compare_paired": "._paired",
    "difference_interval": "._paired",
    "holm": "._paired",
    "trials_to_decide": "._paired",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from ._estimate import CONFIDENCE as CONFIDENCE
    from ._estimate import CellEstimate as CellEstimate
    from ._estimate import Interval as Interval
    from ._estimate import VariantEstimate as VariantEstimate
    from ._estimate import estimate_cell as estimate_cell
    from ._estimate import estimate_variant as estimate_variant
    from ._estimate import wilson as wilson
    from ._flaky import FlakeEstimate as FlakeEstimate
    from ._flaky import Reading as Reading
    from ._flaky import flake_estimate as flake_estimate
    from ._paired import ALPHA as ALPHA
    from ._paired import CELL_MARGIN as CELL_MARGIN
    from ._paired import VARIANT_MARGIN as VARIANT_MARGIN
    from ._paired import CellChange as CellChange
    from ._paired import Counts as Counts
    from ._paired import Pair as Pair
    from ._paired import PairedComparison as PairedComparison
    from ._paired import VariantChange as VariantChange
    from ._paired import compare_paired as compare_paired
    from ._paired import difference_interval as difference_interval
    from ._paired import holm as holm
    from ._paired import trials_to_decide as trials_to_decide
    from ._plan import Plan as Plan
    from ._plan import plan_variant as plan_variant
    from ._sequence import ConfidenceSequence as ConfidenceSequence


__getattr__ = lazy_names(__name__, _EXPORTS)
