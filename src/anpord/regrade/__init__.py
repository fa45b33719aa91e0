"""``anpord regrade``: a recorded run decided again by today's checks, judges and verifiers,
without running the agents — the recording stands in for them (see ``_harness``)."""

from ._harness import SPEC_PREFIX, ReplayHarness
from ._plan import RegradePlan, plan_regrade
from ._recorded import RecordedTrial, RecordedTurn, recorded_trial

__all__ = ["SPEC_PREFIX", "RecordedTrial", "RecordedTurn", "RegradePlan", "ReplayHarness", "plan_regrade",
           "recorded_trial"]
