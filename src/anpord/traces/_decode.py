"""OTLP/HTTP export requests → spans: protobuf (``application/x-protobuf``, decoded with
``opentelemetry-proto``, imported on the first protobuf request) and JSON (``application/json``,
OTLP's JSON mapping: hex ids, camelCase keys, ``AnyValue`` objects, 64-bit numbers as strings).

Anything that is not a well-formed request raises ``TraceInputError`` with a one-line reason.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
from collections.abc import Mapping
from typing import Any

from ._map import JSON_ATTRIBUTES, is_json_text
from ._spans import MAX_ARRAY, MAX_ATTRIBUTES, MAX_DEPTH, MAX_STRING, Clips, Span, TraceInputError, clip_attribute

__all__ = ["decode_json", "decode_protobuf", "encode_response", "prewarm_protobuf"]

_STATUS = {0: "unset", 1: "ok", 2: "error"}
_JSON_STATUS = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_JSON_KINDS = {
    "SPAN_KIND_UNSPECIFIED": 0, "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3, "SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5,
}


# -- protobuf ------------------------------------------------------------------------------


def _pb_value(value: Any, depth: int, key: str, clips: Clips, top: bool = False) -> Any:
    """One ``AnyValue``; ``key`` is the span attribute it is (part of), for the log."""
    if depth > MAX_DEPTH:
        raise TraceInputError(f"an attribute value nests deeper than {MAX_DEPTH} levels")
    which = value.WhichOneof("value")
    if which == "string_value":
        text = value.string_value
        if len(text) <= MAX_STRING:
            return text
        return clip_attribute(key, text, clips, is_json_text if top and key in JSON_ATTRIBUTES else None)
    if which == "bool_value":
        return value.bool_value
    if which == "int_value":
        return value.int_value
    if which == "double_value":
        return value.double_value
    if which == "bytes_value":
        return value.bytes_value.hex()
    if which == "array_value":
        values = value.array_value.values
        if len(values) > MAX_ARRAY:
            clips.cut(key)
            values = values[:MAX_ARRAY]
        return [_pb_value(v, depth + 1, key, clips) for v in values]
    if which == "kvlist_value":
        return _pb_map(value.kvlist_value.values, depth + 1, clips, key)
    return None


def _pb_map(kvs: Any, depth: int, clips: Clips, key: str = "") -> dict[str, Any]:
    """Key/values as a dict of at most ``MAX_ATTRIBUTES`` keys (the first ones; a key repeated
    takes its last value), as the JSON decoder reads them; ``key``: the attribute they are in,
    none for a span's own attributes."""
    out: dict[str, Any] = {}
    for kv in kvs:
        name = kv.key
        if len(out) >= MAX_ATTRIBUTES and name not in out:
            clips.cut(key or name)  # not read at all: a crafted map may hold a million
            continue
        value = kv.value
        # Most values are short strings and numbers: read here, without a call per value (every
        # attribute of every span comes through here). The rest as ``_pb_value`` reads them.
        which = value.WhichOneof("value")
        if which == "string_value":
            text = value.string_value
            if len(text) <= MAX_STRING:
                out[name] = text
                continue
        elif which == "int_value":
            out[name] = value.int_value
            continue
        out[name] = _pb_value(value, depth, key or name, clips, top=not key)
    return out


# protobuf's OTLP classes, once imported: (DecodeError, ExportTraceServiceRequest).
_protobuf_classes: tuple[Any, Any] | None = None
_warming: threading.Thread | None = None


def _protobuf() -> tuple[Any, Any]:
    global _protobuf_classes
    if _protobuf_classes is None:
        try:
            from google.protobuf.message import DecodeError
            from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        except ImportError:  # pragma: no cover - a dependency of anpord
            raise TraceInputError(
                "this anpord cannot read OTLP protobuf: install opentelemetry-proto, or export with "
                "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"
            ) from None
        _protobuf_classes = (DecodeError, ExportTraceServiceRequest)
    return _protobuf_classes


def prewarm_protobuf() -> None:
    """Import protobuf's OTLP classes in a thread, once per process. They take tens of
    milliseconds to import, which the first export would otherwise spend on the event loop that
    every trial shares; started as a trial's receiver opens, they are in by the time its agent
    (a program still starting, or a server still answering) exports. The thread imports what
    ``decode_protobuf`` does, in the same order, so a decode that comes first waits for it."""
    global _warming
    if _protobuf_classes is not None or _warming is not None:
        return

    def warm() -> None:
        try:
            _protobuf()
        except TraceInputError:  # pragma: no cover - said by the first decode instead
            pass

    _warming = threading.Thread(target=warm, name="anpord-otlp-import", daemon=True)
    _warming.start()


def decode_protobuf(body: bytes) -> list[tuple[dict[str, Any], list[Span]]]:
    """Per resource: its attributes and its spans."""
    DecodeError, ExportTraceServiceRequest = _protobuf()
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise TraceInputError(f"not an OTLP protobuf trace export: {exc or type(exc).__name__}") from None
    out = []
    for rs in request.resource_spans:
        resource = _pb_map(rs.resource.attributes, 1, Clips())
        spans = []
        for ss in rs.scope_spans:
            scope = ss.scope.name
            for s in ss.spans:
                if len(s.trace_id) != 16 or len(s.span_id) != 8:
                    raise TraceInputError("a span without a 16-byte trace id and an 8-byte span id")
                clips, code = Clips(), int(s.status.code)
                spans.append(Span(
                    trace_id=s.trace_id.hex(), span_id=s.span_id.hex(),
                    parent_span_id=s.parent_span_id.hex() if s.parent_span_id else None,
                    name=s.name, kind=int(s.kind),
                    start=s.start_time_unix_nano / 1e9, end=s.end_time_unix_nano / 1e9,
                    status=_STATUS.get(code, "unset"), status_message=s.status.message,
                    attributes=_pb_map(s.attributes, 1, clips), resource=resource,
                    # Read only for a failed span, the one time the mapping looks at them (as
                    # ``_inprocess`` does): the list costs a span half a microsecond even empty.
                    events=[(e.name, _pb_map(e.attributes, 1, clips)) for e in s.events
                            if e.name == "exception"] if code == 2 else [],
                    scope=scope, clipped=clips.first,
                ))
        out.append((resource, spans))
    return out


# -- JSON ----------------------------------------------------------------------------------


def _field(obj: Mapping[str, Any], camel: str, snake: str, default: Any = None) -> Any:
    # OTLP/JSON says lowerCamelCase; receivers must also accept the proto field names.
    value = obj.get(camel, obj.get(snake, default))
    return default if value is None else value


def _json_id(raw: Any, size: int, what: str, *, optional: bool = False) -> str | None:
    if raw in (None, "") and optional:
        return None
    if not isinstance(raw, str):
        raise TraceInputError(f"a span's {what} is not a string")
    text = raw.lower()
    if len(text) == size * 2:
        try:
            bytes.fromhex(text)
            return text
        except ValueError:
            pass
    # Some exporters wrote ids as proto3 JSON does (base64) before the OTLP spec settled on hex.
    try:
        decoded = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) == size:
        return decoded.hex()
    raise TraceInputError(f"a span's {what} {raw[:40]!r} is not {size * 2} hex digits")


# OTLP's integers are 64-bit (int64 attributes, fixed64 times): anything past them is malformed,
# and a time past them would not convert to seconds.
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 64) - 1
# A decimal integer as proto3 JSON writes one: one optional sign, ASCII digits only (str.isdigit
# also takes "²" and other digits int() refuses), no more of them than a 64-bit number has.
_INTEGER = re.compile(r"[-+]?[0-9]{1,20}")


def _json_int(raw: Any, what: str) -> int:
    if isinstance(raw, bool):
        raise TraceInputError(f"{what} is not a number")
    if isinstance(raw, int):
        value = raw
    elif isinstance(raw, str) and _INTEGER.fullmatch(raw):
        value = int(raw)
    elif isinstance(raw, float) and raw.is_integer():
        value = int(raw)
    else:
        raise TraceInputError(f"{what} {str(raw)[:40]!r} is not an integer")
    if not _INT_MIN <= value <= _INT_MAX:
        raise TraceInputError(f"{what} {str(raw)[:40]!r} is out of a 64-bit integer's range")
    return value


def _json_value(value: Any, depth: int, key: str, clips: Clips, top: bool = False) -> Any:
    """One ``AnyValue`` object; ``key`` is the span attribute it is (part of), for the log."""
    if depth > MAX_DEPTH:
        raise TraceInputError(f"an attribute value nests deeper than {MAX_DEPTH} levels")
    if not isinstance(value, Mapping):
        raise TraceInputError("an attribute value is not an AnyValue object")
    if "stringValue" in value or "string_value" in value:
        v = _field(value, "stringValue", "string_value", "")
        text = v if isinstance(v, str) else str(v)
        if len(text) <= MAX_STRING:
            return text
        return clip_attribute(key, text, clips, is_json_text if top and key in JSON_ATTRIBUTES else None)
    if "boolValue" in value or "bool_value" in value:
        return bool(_field(value, "boolValue", "bool_value"))
    if "intValue" in value or "int_value" in value:
        return _json_int(_field(value, "intValue", "int_value"), "an intValue")
    if "doubleValue" in value or "double_value" in value:
        v = _field(value, "doubleValue", "double_value")
        try:
            return float(v)
        except (TypeError, ValueError, OverflowError):  # OverflowError: an integer past a double's range
            raise TraceInputError(f"a doubleValue {str(v)[:40]!r} is not a number") from None
    if "bytesValue" in value or "bytes_value" in value:
        v = _field(value, "bytesValue", "bytes_value", "")
        try:
            return base64.b64decode(v).hex()
        except (binascii.Error, ValueError, TypeError):
            raise TraceInputError("a bytesValue is not base64") from None
    if "arrayValue" in value or "array_value" in value:
        arr = _field(value, "arrayValue", "array_value", {})
        values = arr.get("values", []) if isinstance(arr, Mapping) else None
        if not isinstance(values, list):
            raise TraceInputError("an arrayValue without a values list")
        if len(values) > MAX_ARRAY:
            clips.cut(key)
            values = values[:MAX_ARRAY]
        return [_json_value(v, depth + 1, key, clips) for v in values]
    if "kvlistValue" in value or "kvlist_value" in value:
        kv = _field(value, "kvlistValue", "kvlist_value", {})
        return _json_attributes(kv.get("values", []) if isinstance(kv, Mapping) else None, clips, depth + 1, key)
    return None  # an empty AnyValue


def _json_attributes(kvs: Any, clips: Clips, depth: int = 1, key: str = "") -> dict[str, Any]:
    """Key/values as a dict of at most ``MAX_ATTRIBUTES`` keys (see ``_pb_map``)."""
    if kvs is None:
        return {}
    if not isinstance(kvs, list):
        raise TraceInputError("attributes are not a list of key/value objects")
    out: dict[str, Any] = {}
    for kv in kvs:
        if not isinstance(kv, Mapping) or not isinstance(kv.get("key"), str):
            raise TraceInputError("an attribute without a string key")
        name = kv["key"]
        if len(out) >= MAX_ATTRIBUTES and name not in out:
            clips.cut(key or name)
            continue
        out[name] = _json_value(kv.get("value") or {}, depth, key or name, clips, top=not key)
    return out


def _json_list(obj: Mapping[str, Any], camel: str, snake: str) -> list[Any]:
    value = _field(obj, camel, snake, [])
    if not isinstance(value, list):
        raise TraceInputError(f"{camel} is not a list")
    return value


def _json_enum(raw: Any, names: Mapping[str, int], what: str) -> int:
    if isinstance(raw, str) and raw in names:
        return names[raw]
    return _json_int(raw, what)


def decode_json(body: bytes) -> list[tuple[dict[str, Any], list[Span]]]:
    try:
        doc = json.loads(body)
    except RecursionError:
        raise TraceInputError("the JSON nests deeper than this receiver reads") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise TraceInputError(f"not JSON: {exc}") from None
    if not isinstance(doc, Mapping):
        raise TraceInputError("an OTLP/JSON trace export is an object with resourceSpans")
    out = []
    for rs in _json_list(doc, "resourceSpans", "resource_spans"):
        if not isinstance(rs, Mapping):
            raise TraceInputError("a resourceSpans entry is not an object")
        res = rs.get("resource") or {}
        resource = _json_attributes(res.get("attributes") if isinstance(res, Mapping) else None, Clips())
        spans = []
        for ss in _json_list(rs, "scopeSpans", "scope_spans"):
            if not isinstance(ss, Mapping):
                raise TraceInputError("a scopeSpans entry is not an object")
            scope = ss.get("scope") or {}
            scope_name = str(scope.get("name", "")) if isinstance(scope, Mapping) else ""
            for s in _json_list(ss, "spans", "spans"):
                if not isinstance(s, Mapping):
                    raise TraceInputError("a span is not an object")
                status = s.get("status") or {}
                if not isinstance(status, Mapping):
                    raise TraceInputError("a span's status is not an object")
                clips, events = Clips(), []
                code = _json_enum(status.get("code", 0), _JSON_STATUS, "a status code")
                attributes = _json_attributes(s.get("attributes"), clips)  # before events, as protobuf's
                listed = _json_list(s, "events", "events")
                # Exception events are read as protobuf's are: for a failed span only.
                for e in listed if code == 2 else ():
                    if isinstance(e, Mapping) and e.get("name") == "exception":
                        events.append(("exception", _json_attributes(e.get("attributes"), clips)))
                spans.append(Span(
                    trace_id=_json_id(_field(s, "traceId", "trace_id"), 16, "traceId") or "",
                    span_id=_json_id(_field(s, "spanId", "span_id"), 8, "spanId") or "",
                    parent_span_id=_json_id(_field(s, "parentSpanId", "parent_span_id"), 8,
                                            "parentSpanId", optional=True),
                    name=str(s.get("name", "")),
                    kind=_json_enum(s.get("kind", 0), _JSON_KINDS, "a span kind"),
                    start=_json_int(_field(s, "startTimeUnixNano", "start_time_unix_nano", 0),
                                    "startTimeUnixNano") / 1e9,
                    end=_json_int(_field(s, "endTimeUnixNano", "end_time_unix_nano", 0),
                                  "endTimeUnixNano") / 1e9,
                    status=_STATUS.get(code, "unset"), status_message=str(status.get("message", "")),
                    attributes=attributes, resource=resource,
                    events=events, scope=scope_name, clipped=clips.first,
                ))
        out.append((resource, spans))
    return out


# -- the response --------------------------------------------------------------------------


def encode_response(protobuf: bool, rejected: int = 0, message: str = "") -> bytes:
    """An ``ExportTraceServiceResponse``: empty, or a partial success naming what was refused."""
    if protobuf and not rejected:
        return b""  # the empty message, as protobuf writes it: no message built per export
    if protobuf:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        response = ExportTraceServiceResponse()
        if rejected:
            response.partial_success.rejected_spans = rejected
            response.partial_success.error_message = message
        return response.SerializeToString()
    if not rejected:
        return b"{}"
    return json.dumps({"partialSuccess": {"rejectedSpans": str(rejected), "errorMessage": message}}).encode()
