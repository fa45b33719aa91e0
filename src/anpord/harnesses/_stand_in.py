"""What a harness that stands in for a variant's own (``inner``) shares: the audit's saboteurs
and regrade's replay answer for the agent, but the trial's sandbox opens and is prepared as it
would be for ``inner``, so the checks look at the same workspace; nothing of the agent starts."""

from __future__ import annotations

from ._protocol import Harness, HarnessContext

__all__ = ["StandIn"]


class StandIn:
    inner: Harness | None

    @property
    def needs_sandbox(self) -> bool:
        return self.inner is not None and self.inner.needs_sandbox

    async def setup(self) -> None:
        """Nothing: the agent is not started, so neither is what it shares across trials."""

    async def teardown(self) -> None:
        pass

    async def prepare_sandbox(self, ctx: HarnessContext) -> None:
        # The profile's files, as when the agent runs: the workspace's base is the same.
        if self.inner is not None:
            await self.inner.prepare_sandbox(ctx)
