"""Mock declarations: ``http_mock``, ``cli_mock``, ``mcp_mock`` and ``mcp_tool``.

Plain frozen values, checked when the eval file is imported: a bad one raises ``DefinitionError``
naming the mock and the field, which discovery reports as one line with the file (exit 2).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import DefinitionError
from ..expect import is_matcher

__all__ = ["HttpMock", "CliMock", "McpMock", "McpTool", "Mock", "http_mock", "cli_mock", "mcp_mock",
           "mcp_tool", "merge_mocks", "check_mocks", "env_name", "env_clash"]

MOCK_CALLED = "mock.called"  # the event each call a mock receives is recorded as
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "*")
ROUTE_KEYS = frozenset({"status", "json", "text", "headers", "delay"})
RESPONSE_KEYS = frozenset({"argv", "stdout", "stderr", "exit_code"})
# A mock's name becomes part of an environment variable, a program name and an MCP server name.
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
_ROUTE = re.compile(r"^(?P<method>[A-Z]+|\*) (?P<path>/\S*)$")
# A header as HTTP/1.1 allows it (RFC 9110): a token for the name, no control character but a tab
# in the value (a CR or LF would end the header and let the value write headers of its own).
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_HEADER_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _name(kind: str, name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise DefinitionError(
            f"{kind} name must be a letter then letters, digits, '-' or '_' (at most 64), got {name!r}")
    return name


def glob(pattern: str) -> re.Pattern[str]:
    """A ``*`` pattern (routes, and the route or command line a mock assertion names): each ``*``
    any run of characters, ``/`` and spaces included; every other character itself."""
    return re.compile(".*".join(map(re.escape, pattern.split("*"))), re.DOTALL)


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # exact, or with "*" standing for any run of characters ("/orders/*", "/a/*/b")
    answer: Mapping[str, Any] | Callable[..., Any]
    _glob: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if "*" in self.path:
            object.__setattr__(self, "_glob", glob(self.path))

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"

    def matches(self, method: str, path: str) -> bool:
        if self.method not in ("*", method):
            return False
        if self._glob is not None:
            return self._glob.fullmatch(path) is not None
        return path == self.path


@dataclass(frozen=True)
class HttpMock:
    name: str
    routes: tuple[Route, ...]
    kind: str = field(default="http", init=False)


@dataclass(frozen=True)
class CliMock:
    name: str
    responses: tuple[Mapping[str, Any], ...]
    default: Mapping[str, Any]  # when no response's argv matches
    default_given: bool = False  # the user's own default: answering with it is no miss
    kind: str = field(default="cli", init=False)


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str
    schema: Mapping[str, Any]
    result: Any  # a value, or a function of the call's arguments (sync or async)


@dataclass(frozen=True)
class McpMock:
    name: str
    tools: tuple[McpTool, ...]
    kind: str = field(default="mcp", init=False)


Mock = HttpMock | CliMock | McpMock


def _route(mock: str, key: Any, answer: Any) -> Route:
    where = f"http_mock {mock!r}: routes[{key!r}]"
    m = _ROUTE.match(key) if isinstance(key, str) else None
    if m is None or m.group("method") not in METHODS:
        raise DefinitionError(f"{where}: a route is \"METHOD /path\" (METHOD one of "
                              f"{', '.join(METHODS)}; a * in the path matches any run of characters)")
    if any(c in m.group("path") for c in "?#"):  # no request's path holds one: it could never answer
        raise DefinitionError(f"{where}: a route's path has no query string or fragment (a request's "
                              f"query is recorded as query, and a route function reads request.query)")
    if callable(answer):
        return Route(m.group("method"), m.group("path"), answer)
    if not isinstance(answer, Mapping):
        raise DefinitionError(f"{where}: must be a dict of {', '.join(sorted(ROUTE_KEYS))} or a function")
    unknown = set(answer) - ROUTE_KEYS
    if unknown:
        raise DefinitionError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))} "
                              f"(known: {', '.join(sorted(ROUTE_KEYS))})")
    problem = answer_problem(answer)
    if problem is None and "json" in answer:
        try:
            json_body(answer["json"])
        except ValueError as exc:
            problem = str(exc)
    if problem is not None:
        raise DefinitionError(f"{where}: {problem}")
    return Route(m.group("method"), m.group("path"), dict(answer))


def answer_problem(answer: Mapping[str, Any]) -> str | None:
    """What is wrong with a route's answer, or ``None``: checked when a route is declared, and on
    what a route function returns, so the agent never gets a response HTTP cannot carry."""
    if "json" in answer and "text" in answer:
        return "give json or text, not both"
    status = answer.get("status", 200)
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
        return f"status must be an HTTP status code (100-599), got {status!r}"
    if "text" in answer and not isinstance(answer["text"], str):
        return "text must be a string"
    delay = answer.get("delay", 0)
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay < math.inf:
        return f"delay must be seconds (>= 0, finite), got {delay!r}"
    return _headers_problem(answer.get("headers", {}))


def _headers_problem(headers: Any) -> str | None:
    if not isinstance(headers, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in headers.items()):
        return "headers must be a dict of strings"
    for name, value in headers.items():
        if not _HEADER_NAME.match(name):
            return f"header name {name!r} is not an HTTP token (letters, digits, !#$%&'*+-.^_`|~)"
        if _HEADER_BAD_VALUE.search(value):
            return f"header {name}: its value {value!r} holds a control character (CR, LF...)"
    return None


def json_body(value: Any) -> bytes:
    """``value`` as a JSON body; ``ValueError`` saying why when JSON cannot hold it (NaN and
    infinity included: ``NaN`` on the wire is not JSON)."""
    try:
        return json.dumps(value, allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise ValueError(f"json is not JSON-serialisable: {exc}") from None


def http_mock(name: str, routes: Mapping[str, Any] | None = None) -> HttpMock:
    """A real HTTP server per trial; the agent finds it at ``ANPORD_MOCK_<NAME>_URL``. ``routes``
    maps ``"METHOD /path"`` to ``{"status", "json" | "text", "headers", "delay"}`` or to a function
    of the request (returning such a dict, or a JSON value answered with 200)."""
    name = _name("http_mock", name)
    if routes is None:
        routes = {}
    if not isinstance(routes, Mapping):
        raise DefinitionError(f"http_mock {name!r}: routes must be a dict of \"METHOD /path\" to answers")
    return HttpMock(name, tuple(_route(name, k, v) for k, v in routes.items()))


def _response(mock: str, i: int, response: Any, *, default: bool = False) -> Mapping[str, Any]:
    where = f"cli_mock {mock!r}: " + ("default" if default else f"responses[{i}]")
    if not isinstance(response, Mapping):
        raise DefinitionError(f"{where}: must be a dict of {', '.join(sorted(RESPONSE_KEYS))}")
    unknown = set(response) - RESPONSE_KEYS
    if unknown:
        raise DefinitionError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))} "
                              f"(known: {', '.join(sorted(RESPONSE_KEYS))})")
    argv = response.get("argv")
    if argv is not None and (isinstance(argv, (str, bytes)) or not isinstance(argv, Sequence)):
        raise DefinitionError(f"{where}: argv must be a list of the arguments after the program name")
    for j, arg in enumerate(argv or ()):  # an argument is text: a number here could never match one
        if not (isinstance(arg, (str, re.Pattern)) or callable(arg) or is_matcher(arg)):
            raise DefinitionError(f"{where}: argv[{j}] must be a string, a regex or a predicate "
                                  f"(arguments are text), got {arg!r}")
    for key in ("stdout", "stderr"):
        if not isinstance(response.get(key, ""), str):
            raise DefinitionError(f"{where}: {key} must be a string")
    code = response.get("exit_code", 0)
    if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code <= 255:
        raise DefinitionError(f"{where}: exit_code must be 0-255, got {code!r}")
    return dict(response, argv=None if argv is None else list(argv))


def cli_mock(name: str, responses: Iterable[Mapping[str, Any]] = (), *,
             default: Mapping[str, Any] | None = None) -> CliMock:
    """A program ``name`` first on the agent's PATH. The first response whose ``argv`` matches
    the arguments (as everywhere: a list element by element, a regex, a predicate; no argv matches
    any) answers with its ``stdout``, ``stderr`` and ``exit_code``; none matching: ``default``, else
    exit 1 saying so on stderr."""
    name = _name("cli_mock", name)
    if isinstance(responses, (str, bytes, Mapping)):
        raise DefinitionError(f"cli_mock {name!r}: responses must be a list of dicts")
    listed = tuple(_response(name, i, r) for i, r in enumerate(responses))
    fallback = _response(name, 0, default, default=True) if default is not None else {
        "stderr": f"{name}: no mocked response for these arguments\n", "exit_code": 1}
    return CliMock(name, listed, fallback, default is not None)


_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def mcp_tool(name: str, description: str = "", schema: Mapping[str, Any] | None = None,
             result: Any = None) -> McpTool:
    """A tool of an ``mcp_mock``: ``result`` is its answer (text, or a JSON value sent as text),
    or a function of the call's arguments returning one; a function that raises is a tool error."""
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        raise DefinitionError(f"mcp_tool name must be 1-128 letters, digits, '_', '-' or '.' "
                              f"(as MCP names tools, and the CLIs and model APIs take them), got {name!r}")
    if not isinstance(description, str):
        raise DefinitionError(f"mcp_tool {name!r}: description must be a string")
    schema = {"type": "object", "properties": {}} if schema is None else schema
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        raise DefinitionError(f"mcp_tool {name!r}: schema must be a JSON schema of type object")
    return McpTool(name, description, dict(schema), result)


def mcp_mock(name: str, tools: Iterable[McpTool] = ()) -> McpMock:
    """An MCP server over stdio; agents find it in ``ANPORD_MCP_CONFIG`` (``mcpServers`` JSON)."""
    name = _name("mcp_mock", name)
    listed = tuple(tools)
    seen: set[str] = set()
    for i, tool in enumerate(listed):
        if not isinstance(tool, McpTool):
            raise DefinitionError(f"mcp_mock {name!r}: tools[{i}] must be mcp_tool(...), got {type(tool).__name__}")
        if tool.name in seen:
            raise DefinitionError(f"mcp_mock {name!r}: tools has two tools named {tool.name!r}")
        seen.add(tool.name)
    return McpMock(name, listed)


def check_mocks(value: Any, where: str) -> tuple[Mock, ...]:
    """``mocks=`` as a tuple of mock values with distinct names; ``where`` names its owner."""
    if value is None:
        return ()
    if isinstance(value, (HttpMock, CliMock, McpMock)):
        value = (value,)
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise DefinitionError(f"{where} mocks= must be a list of http_mock/cli_mock/mcp_mock values")
    mocks = tuple(value)
    names: set[str] = set()
    for i, mock in enumerate(mocks):
        if not isinstance(mock, (HttpMock, CliMock, McpMock)):
            raise DefinitionError(f"{where} mocks[{i}] must be http_mock/cli_mock/mcp_mock(...), "
                                  f"got {type(mock).__name__}")
        if mock.name in names:
            raise DefinitionError(f"{where} mocks= has two mocks named {mock.name!r}")
        names.add(mock.name)
    clash = env_clash(mocks)
    if clash is not None:
        raise DefinitionError(f"{where} mocks= has {clash}")
    return mocks


def env_name(name: str) -> str:
    """The variable an HTTP mock's URL is in: ``pay-api`` → ``ANPORD_MOCK_PAY_API_URL``."""
    return f"ANPORD_MOCK_{name.upper().replace('-', '_')}_URL"


def env_clash(mocks: Iterable[Mock]) -> str | None:
    """Two HTTP mocks whose URLs would be one variable (``pay-api`` and ``Pay_API``): one would
    be out of the agent's reach; what to say, else ``None``."""
    seen: dict[str, str] = {}
    for mock in mocks:
        if not isinstance(mock, HttpMock):
            continue
        var = env_name(mock.name)
        if var in seen and seen[var] != mock.name:
            return f"two HTTP mocks, {seen[var]!r} and {mock.name!r}, whose URL is one variable, {var}"
        seen[var] = mock.name
    return None


def merge_mocks(*levels: Sequence[Mock]) -> tuple[Mock, ...]:
    """One trial's mocks: later levels (more specific) replace earlier ones of the same name."""
    by_name: dict[str, Mock] = {}
    for level in levels:
        for mock in level:
            by_name.pop(mock.name, None)
            by_name[mock.name] = mock
    return tuple(by_name.values())
