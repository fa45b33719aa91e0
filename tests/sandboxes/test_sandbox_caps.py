"""The caps' settings as a variant and the environment give them, and the seccomp filter's
shape per architecture. (That the caps and the filter bind is proved by real sandboxes: see
test_sandbox_privileges.py and tests/runner/test_sandbox_limits.py.)"""

from __future__ import annotations

import pytest

from anpord.sandboxes._cgroup import DEFAULT_MEMORY, DEFAULT_PIDS, memory_cap, pids_cap
from anpord.sandboxes._seccomp import userns_filter


def test_caps_come_from_the_variant_then_the_environment_then_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANPORD_SANDBOX_MEMORY", raising=False)
    monkeypatch.delenv("ANPORD_SANDBOX_PIDS", raising=False)
    assert (memory_cap({}), pids_cap({})) == (DEFAULT_MEMORY, DEFAULT_PIDS) == (4 << 30, 1024)
    monkeypatch.setenv("ANPORD_SANDBOX_MEMORY", "512M")
    monkeypatch.setenv("ANPORD_SANDBOX_PIDS", "64")
    assert (memory_cap({}), pids_cap({})) == (512 << 20, 64)
    options = {"memory": "2G", "pids": 300}
    assert (memory_cap(options), pids_cap(options)) == (2 << 30, 300)
    assert (memory_cap({"memory": "none"}), pids_cap({"pids": "unlimited"})) == (None, None)


@pytest.mark.parametrize(("options", "message"), [
    ({"memory": "lots"}, "Variant options memory: 'lots' is not a size (e.g. 512M, 2G, or none)"),
    ({"pids": 3}, "Variant options pids: 3 is below the smallest cap, 8"),
    ({"pids": True}, "Variant options pids: True is not a number of processes (e.g. 256, or none)"),
    ({"pids": "1.5"}, "Variant options pids: '1.5' is not a number of processes (e.g. 256, or none)"),
])
def test_a_bad_cap_is_one_line_naming_where_it_came_from(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        memory_cap(options) if "memory" in options else pids_cap(options)
    assert str(caught.value) == message


def test_the_seccomp_filter_covers_the_known_architectures_only() -> None:
    for machine in ("x86_64", "aarch64"):
        program = userns_filter(machine)
        assert program is not None and len(program) % 8 == 0  # struct sock_filter records
        assert len(program) // 8 < 64
    assert userns_filter("riscv64") is None
