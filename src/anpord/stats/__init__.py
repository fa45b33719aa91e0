"""Statistics for pass rates: intervals for cells and variants, paired comparisons, confidence
sequences and planning. Pure functions over counts, returning typed records (docs/statistics.md).
"""

from ._estimate import (
    CONFIDENCE,
    CellEstimate,
    Interval,
    VariantEstimate,
    estimate_cell,
    estimate_variant,
    wilson,
)
from ._flaky import FlakeEstimate, Reading, flake_estimate
from ._plan import Plan, plan_variant
from ._sequence import ConfidenceSequence
from ._paired import (
    ALPHA,
    CELL_MARGIN,
    VARIANT_MARGIN,
    CellChange,
    Counts,
    Pair,
    PairedComparison,
    VariantChange,
    compare_paired,
    difference_interval,
    holm,
    trials_to_decide,
)

__all__ = [
    "ALPHA",
    "CELL_MARGIN",
    "CONFIDENCE",
    "VARIANT_MARGIN",
    "CellChange",
    "CellEstimate",
    "ConfidenceSequence",
    "Counts",
    "FlakeEstimate",
    "Interval",
    "Pair",
    "Plan",
    "Reading",
    "PairedComparison",
    "VariantChange",
    "VariantEstimate",
    "compare_paired",
    "difference_interval",
    "estimate_cell",
    "estimate_variant",
    "flake_estimate",
    "holm",
    "plan_variant",
    "trials_to_decide",
    "wilson",
]
