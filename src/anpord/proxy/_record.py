"""A proxied model call as the trial records it (``model.called``, ``source: "proxy"``), and the
key a replay matches requests on."""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from ._providers import Route, sse_payloads, usage_of

__all__ = ["ABANDONED", "KEPT", "NOT_DECODED", "call_record", "decoded_answer", "decoded_body", "recorded_answer", "request_key"]

KEPT = 8 << 20  # characters of a request or an answer the record keeps (a replay needs them whole)
# Request fields that differ from run to run without changing what is asked (a session id).
# Codex also sends the session's, thread's and turn's ids (``client_metadata``).
_VOLATILE = ("metadata", "user", "prompt_cache_key", "safety_identifier", "client_metadata")
# The same inside each item of a Responses API ``input``: the ids and creation times Codex gives
# the items it sends (``msg_<uuid>``); the items' content and their ``call_id`` stay.
_VOLATILE_ITEM = ("id", "internal_chat_message_metadata_passthrough")
# The day a CLI tells its model it is — Codex's ``<current_date>2026-12-02``, Claude Code's
# ``Today's date is 2026-12-02``, Gemini CLI's ``Today's date is Wednesday, December 2, 2026``:
# a replay on another day asks the same.
_TODAY = re.compile(r"(<current_date>|Today's date is )(?:\d{4}-\d{2}-\d{2}|[A-Z][a-z]+, [A-Z][a-z]+ \d{1,2}, \d{4})")


# The error of a call the agent gave up on before its answer came: the record holds no answer,
# so a replay never gives one for it.
ABANDONED = "the agent closed the connection before the answer was complete"

# What ``decoded=`` says when the caller has not decoded the body (None is a decoded empty body).
NOT_DECODED: Any = object()


def decoded_answer(answer: bytes, encoding: str | None) -> bytes:
    """An answer's bytes as the record reads them. The proxy asks for ``identity``, but an
    upstream may compress all the same: gzip and deflate are decompressed (Brotli too where its
    module is installed), up to the ``KEPT`` bytes the record keeps, so the call's usage is read
    and a replay sends the answer itself. The agent got the bytes as they came, encoding and all."""
    coding = (encoding or "").strip().lower()
    if not answer or coding in ("", "identity"):
        return answer
    try:
        if coding in ("gzip", "x-gzip", "deflate"):
            try:  # a gzip or zlib header, told apart by zlib itself
                return zlib.decompressobj(zlib.MAX_WBITS | 32).decompress(answer, KEPT)
            except zlib.error:  # deflate without its zlib header, as some servers send it
                return zlib.decompressobj(-zlib.MAX_WBITS).decompress(answer, KEPT)
        if coding == "br":
            import brotli  # type: ignore[import-not-found,import-untyped,unused-ignore]

            # Bounded like zlib's: a few KiB of Brotli can stand for gigabytes. (A module too old
            # to bound its output leaves the answer as it came.)
            return bytes(brotli.Decompressor().process(answer, output_buffer_limit=KEPT))[:KEPT]
    except Exception:  # noqa: BLE001 - unreadable, or no module for it: kept as it came
        return answer
    return answer


# A run of digits this long may be an integer past 64 bits, which orjson reads as a float: a body
# holding one is read by the standard library's parser, which keeps it exact.
_LONG_DIGITS = re.compile(rb"\d{19}")


def decoded_body(body: bytes) -> Any:
    """A request's or an answer's body as JSON, else as text (None when empty). Read by orjson
    (a tenth of the standard library's time: every proxied call reads two) unless the standard
    library reads it otherwise — a 64-bit-overflowing integer, NaN, a lone surrogate, bytes
    that are not UTF-8 —, so the value, and the replay key made from it, never depend on which."""
    if not body:
        return None
    if _LONG_DIGITS.search(body) is None:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass  # not JSON, or JSON orjson refuses (NaN, a lone surrogate): the standard library decides
    text = body.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def request_key(method: str, path: str, body: bytes, paths: Mapping[str, str], *,
                decoded: Any = NOT_DECODED) -> str:
    """What identifies a request across runs: its method, path and JSON body with the trial's own
    folders written as ``<workspace>``/``<home>`` and per-run fields left out. ``decoded``: the
    body already decoded (``decoded_body``), left unchanged."""
    value = decoded_body(body) if decoded is NOT_DECODED else decoded
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k not in _VOLATILE}
        items = value.get("input")
        if isinstance(items, list):
            value["input"] = [{k: v for k, v in item.items() if k not in _VOLATILE_ITEM}
                              if isinstance(item, dict) else item for item in items]
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    if "<current_date>" in text or "Today's date is " in text:
        text = _TODAY.sub(r"\1…", text)
    for folder, name in sorted(paths.items(), key=lambda p: -len(p[0])):
        if folder:
            text = text.replace(folder, name)
    # surrogatepass: a lone surrogate escaped in the body (valid JSON) is hashed, not refused
    return hashlib.sha256(f"{method} {path.rstrip('/')}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _binary(answer: bytes, redact: Any) -> dict[str, Any]:
    """An answer that is not UTF-8, as its bytes in base64 (what a replay sends back), unless they
    may hold a credential: redaction reads text, and base64 would hide one from it."""
    may_hold = getattr(redact, "may_change", None)
    if may_hold is not None and may_hold(answer):
        return {"binary": "not kept: it may hold a credential"}
    import base64

    return {"body_base64": base64.b64encode(answer[:KEPT]).decode("ascii"),
            **({"truncated": True} if len(answer) > KEPT else {})}


def recorded_answer(response: Mapping[str, Any]) -> bytes | None:
    """A recorded answer's bytes, as the agent first got them; None when the record does not hold
    them whole (cut at ``KEPT``, or bytes not kept), so a replay has no answer to give."""
    if response.get("truncated") or response.get("binary"):
        return None
    encoded = response.get("body_base64")
    if isinstance(encoded, str):
        import base64

        return base64.b64decode(encoded)
    return str(response.get("body") or "").encode("utf-8", "surrogatepass")


def _clip(text: str) -> tuple[str, bool]:
    return (text, False) if len(text) <= KEPT else (text[:KEPT], True)


def call_record(route: Route, method: str, path: str, body: bytes, key: str, status: int, answer: bytes,
                content_type: str | None, *, latency: float, first_byte: float | None, error: str | None,
                redact: Callable[..., Any] | Any, upstream: str | None,
                prices: Mapping[str, Any] | None = None, decoded: Any = NOT_DECODED) -> dict[str, Any]:
    """The ``model.called`` data of one call: provider, model, usage and cost (``prices``, the
    variant's own, before the price table), latency, status, and the request and the answer
    (redacted of the credentials the proxy holds). ``decoded``: the body already decoded, which
    the record's redaction then changes in place."""
    request = decoded_body(body) if decoded is NOT_DECODED else decoded
    streamed = bool(isinstance(request, dict) and request.get("stream")) or "stream" in path.lower() \
        or "event-stream" in (content_type or "")
    try:
        text, binary = answer.decode("utf-8"), None
    except UnicodeDecodeError:  # not text: kept as it came too, for a replay (below)
        text, binary = answer.decode("utf-8", "replace"), answer
    if "event-stream" in (content_type or ""):
        payloads = sse_payloads(text)
    else:
        parsed = decoded_body(answer)
        # Gemini's streamGenerateContent without ?alt=sse answers one JSON array of its chunks.
        payloads = [parsed] if isinstance(parsed, dict) else \
            [p for p in parsed if isinstance(p, dict)] if isinstance(parsed, list) else []
    if isinstance(request, dict) and isinstance(request.get("model"), str):
        model: str | None = request["model"]
        answered, usage = usage_of(route, payloads)
        model = answered or model
    else:
        model, usage = usage_of(route, payloads)
    failed = error is not None or status >= 400
    cost = None
    if route.generates:
        from ..models._pricing import token_cost

        cost = token_cost(model, usage.get("input_tokens"), usage.get("output_tokens"),
                          usage.get("cached_input_tokens"), prices)
    kept, cut = _clip(text)
    data: dict[str, Any] = {
        "source": "proxy", "provider": route.provider, "operation": route.operation, "model": model,
        "stream": streamed, "method": method, "path": path,
        "input_tokens": usage.get("input_tokens"), "output_tokens": usage.get("output_tokens"),
        **{k: v for k, v in usage.items() if k not in ("input_tokens", "output_tokens")},
        "cost": cost, "latency": round(latency, 6),
        "first_byte": None if first_byte is None else round(first_byte, 6),
        "status": "failed" if failed else "completed", "http_status": status,
        "request_key": key,
        "request": redact.value(request) if hasattr(redact, "value") else request,
        "response": {"content_type": content_type, "body": redact(kept) if callable(redact) else kept,
                     **({"truncated": True} if cut else {})},
    }
    if binary is not None:
        data["response"].update(_binary(binary, redact))
    if upstream is not None:
        data["upstream"] = upstream
    if failed:
        data["error"] = error or f"HTTP {status}: {kept[:500]}"
    return data
