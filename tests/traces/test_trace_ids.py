"""A trial's trace ids: well formed, and unique across trials and processes whatever an agent
does to ``random``'s own generator."""

from __future__ import annotations

import os
import random
import re

import pytest

from anpord.traces import TraceService


def _ids(service: TraceService) -> tuple[str, str, str]:
    header, _span_id = service.traceparent()
    return service.trial_id, service.trace_id, header


def test_ids_are_w3c_shaped_and_unaffected_by_seeding_random():
    seen: set[str] = set()
    for _ in range(200):
        random.seed(7)  # an agent seeding for its own reproducibility
        trial_id, trace_id, header = _ids(TraceService())
        assert re.fullmatch(r"[0-9a-f]{16}", trial_id)
        assert re.fullmatch(r"[0-9a-f]{32}", trace_id) and trace_id != "0" * 32
        assert re.fullmatch(rf"00-{trace_id}-[0-9a-f]{{16}}-01", header)
        seen.update((trial_id, trace_id))
    assert len(seen) == 400


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_process_draws_other_ids():
    TraceService()  # the generator has drawn in the parent before the fork
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        try:
            service = TraceService()
            os.write(write, f"{service.trial_id} {service.trace_id}".encode())
        finally:
            os._exit(0)
    os.close(write)
    child = os.read(read, 100).decode().split()
    os.close(read)
    os.waitpid(pid, 0)
    service = TraceService()
    assert len(child) == 2
    assert child != [service.trial_id, service.trace_id]
