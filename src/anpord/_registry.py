"""One registry per extension point: a name maps to an object, loaded on first use.

Every extension group (``anpord.harnesses``, ``anpord.sandboxes``, ``anpord.executors``,
``anpord.importers``, ``anpord.reporters``) is a ``Registry``. Built-ins are declared in code as
``"module:attr"`` specs, so they work whatever the installed distribution's metadata says (an
editable install made from another checkout, say); third-party packages add names through the
group's entry points. Entry points are read only when a name is not known in code, or when
everything is listed (``anpord plugins``): scanning installed distributions costs milliseconds a
command that uses only built-ins never pays.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ._errors import exception_line

__all__ = ["GROUPS", "PluginError", "PluginInfo", "Registry"]

T = TypeVar("T")

# The entry-point groups, in the order ``anpord plugins`` lists them.
GROUPS = ("anpord.harnesses", "anpord.sandboxes", "anpord.executors", "anpord.importers", "anpord.reporters")


class PluginError(ValueError):
    """A name no registry knows, or a plugin that fails to load. The message is one line."""


@dataclass(frozen=True)
class PluginInfo:
    """One loadable name, as ``anpord plugins`` shows it."""

    group: str
    name: str
    package: str  # the distribution that provides it ("anpord" for built-ins)
    version: str | None
    target: str  # "module:attr", or the object's qualified name when registered in code
    error: str | None = None  # the one-line reason it does not load

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "name": self.name, "package": self.package,
                "version": self.version, "target": self.target, "error": self.error}


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return obj


def _anpord_version() -> str | None:
    # The running code's version, not the installed distribution's: its metadata can be stale.
    from ._version import __version__

    return __version__


class Registry(Generic[T]):
    """Names of one group → objects (``T``), each given in code as an object or a
    ``"module:attr"`` string, or found among the group's entry points."""

    def __init__(self, group: str, builtins: dict[str, T | str], *, kind: str, kinds: str | None = None):
        self.group = group
        self.kind = kind  # what one entry is called in messages: "harness", "sandbox", ...
        self.kinds = kinds or f"{kind}s"
        self._entries: dict[str, T | str] = builtins  # shared on purpose: the module's table
        self._builtin = set(builtins)
        self._loaded: dict[str, T] = {}
        self._eps: dict[str, Any] | None = None

    # -- declaring ---------------------------------------------------------------------------

    def register(self, name: str, obj: T | str, *, replace: bool = False) -> None:
        """Add ``name`` (an object or ``"module:attr"``); an existing name needs ``replace``."""
        if not name or not isinstance(name, str):
            raise ValueError(f"a {self.kind} name must be a non-empty string, got {name!r}")
        if name in self._entries and not replace:
            raise ValueError(f"{self.kind} {name!r} is already registered (pass replace=True to override it)")
        self._entries[name] = obj
        self._loaded.pop(name, None)

    # -- finding -----------------------------------------------------------------------------

    def _entry_points(self) -> dict[str, Any]:
        if self._eps is None:
            from importlib.metadata import entry_points

            found: dict[str, Any] = {}
            for ep in entry_points(group=self.group):
                found.setdefault(ep.name, ep)  # the first on sys.path wins, as imports do
            self._eps = found
        return self._eps

    def known(self, name: str) -> bool:
        """Whether ``name`` is declared in code or by an entry point (nothing is imported)."""
        return name in self._entries or name in self._entry_points()

    def names(self) -> list[str]:
        return sorted({*self._entries, *self._entry_points()})

    def get(self, name: str) -> T:
        """The object ``name`` stands for. Unknown, or failing to import: ``PluginError``."""
        if name in self._loaded:
            return self._loaded[name]
        entry = self._entries.get(name)
        if entry is None:
            ep = self._entry_points().get(name)
            if ep is None:
                raise PluginError(f"unknown {self.kind} {name!r}: known {self.kinds} are {', '.join(self.names())}")
            try:
                obj: T = ep.load()
            except Exception as exc:  # noqa: BLE001 - any import failure is the plugin's
                raise PluginError(f"{self.kind} {name!r} from {_package(ep)} does not load: "
                                  f"{exception_line(exc)}") from exc
        elif isinstance(entry, str):
            try:
                obj = _load(entry)
            except Exception as exc:  # noqa: BLE001
                raise PluginError(f"{self.kind} {name!r} ({entry}) does not load: {exception_line(exc)}") from exc
        else:
            obj = entry
        self._loaded[name] = obj
        return obj

    # -- listing -----------------------------------------------------------------------------

    def infos(self) -> list[PluginInfo]:
        """Every name, each loaded once to say whether it loads."""
        out: list[PluginInfo] = []
        version = _anpord_version()
        eps = self._entry_points()
        for name in self.names():
            entry = self._entries.get(name)
            if entry is not None:
                builtin = name in self._builtin
                package = "anpord" if builtin else "(registered in code)"
                target = entry if isinstance(entry, str) else _qualname(entry)
                ver = version if builtin else None
            else:
                ep = eps[name]
                package, ver, target = _dist_name(ep), _dist_version(ep), ep.value
            error = None
            try:
                self.get(name)
            except PluginError as exc:
                error = str(exc)
            out.append(PluginInfo(self.group, name, package, ver, target, error))
        return out


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', type(obj).__name__)}"


def _dist_name(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    return dist.name if dist is not None else "?"


def _dist_version(ep: Any) -> str | None:
    dist = getattr(ep, "dist", None)
    return dist.version if dist is not None else None


def _package(ep: Any) -> str:
    version = _dist_version(ep)
    return f"{_dist_name(ep)} {version}" if version else _dist_name(ep)
