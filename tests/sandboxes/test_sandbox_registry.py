"""The sandbox registry: built-ins by name, a clear error for unknown names, new kinds plug in."""

from __future__ import annotations

import pytest

from anpord.sandboxes import _FACTORIES, get_sandbox, register_sandbox, sandbox_names
from anpord.sandboxes.bwrap import BwrapSandbox
from anpord.sandboxes.docker import DockerSandbox
from anpord.sandboxes.local import LocalSandbox


def test_builtins_resolve_by_name() -> None:
    assert isinstance(get_sandbox("local"), LocalSandbox)
    assert isinstance(get_sandbox("bwrap"), BwrapSandbox)
    assert get_sandbox("local").name == "local" and get_sandbox("bwrap").name == "bwrap"
    assert isinstance(get_sandbox("docker"), DockerSandbox) and get_sandbox("docker").name == "docker"


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(
        ValueError, match=r"unknown sandbox 'lxc': known sandboxes are bwrap, docker, local"
    ):
        get_sandbox("lxc")


def test_a_new_kind_registers_without_touching_the_runner() -> None:
    class Fake:
        name = "fake"

        async def open(self, spec):
            raise NotImplementedError

    register_sandbox("fake", Fake)
    try:
        assert "fake" in sandbox_names()
        assert isinstance(get_sandbox("fake"), Fake)
        with pytest.raises(ValueError, match="already registered"):
            register_sandbox("fake", Fake)
        register_sandbox("fake", lambda: Fake(), replace=True)
        assert isinstance(get_sandbox("fake"), Fake)
    finally:
        _FACTORIES.pop("fake", None)
