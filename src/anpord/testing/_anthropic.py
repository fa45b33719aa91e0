"""The scripted model server's Anthropic Messages endpoint (``POST /v1/messages``): the request is
read as the chat-completions conversation it stands for, the same rules answer it, and the reply
goes back in Anthropic's shape (``text`` and ``tool_use`` blocks; server-sent events when the
request asks for ``stream``), so a CLI that speaks only this API (Claude Code) can be scripted."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["as_chat", "messages_body", "messages_stream"]


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def as_chat(body: Mapping[str, Any]) -> dict[str, Any]:
    """The chat-completions request a Messages request stands for: the system prompt as a system
    message, a user message that only returns tool results as ``tool`` messages (so the rules'
    step counts the tool rounds since the user's last prompt)."""
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        text = system if isinstance(system, str) else "\n".join(str(b.get("text", "")) for b in _blocks(system))
        messages.append({"role": "system", "content": text})
    for m in body.get("messages") or []:
        if not isinstance(m, Mapping):
            continue
        blocks = _blocks(m.get("content"))
        if m.get("role") == "user" and blocks and all(b.get("type") == "tool_result" for b in blocks):
            messages += [{"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": json.dumps(b.get("content"))}
                         for b in blocks]
            continue
        texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
        messages.append({"role": m.get("role"), "content": "\n".join(texts)})
    return {"model": body.get("model"), "messages": messages}


def messages_body(chat: Mapping[str, Any]) -> dict[str, Any]:
    """A chat completion (``model_server.completion``) as a Messages response."""
    choice = chat["choices"][0]
    message = choice["message"]
    content: list[dict[str, Any]] = []
    if message.get("content"):
        content.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or ():
        args = call["function"]["arguments"]
        try:
            value = json.loads(args)
        except ValueError:
            value = {"raw": args}
        content.append({"type": "tool_use", "id": "toolu_" + call["id"].removeprefix("call_"),
                        "name": call["function"]["name"], "input": value})
    usage = chat["usage"]
    return {"id": "msg_" + chat["id"].removeprefix("chatcmpl-"), "type": "message", "role": "assistant",
            "model": chat["model"], "content": content,
            "stop_reason": "tool_use" if message.get("tool_calls") else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"],
                      "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}


def _event(name: str, data: Mapping[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def messages_stream(message: Mapping[str, Any]) -> bytes:
    """A Messages response as the server-sent events a streamed request gets."""
    head = {**message, "content": [], "stop_reason": None,
            "usage": {**message["usage"], "output_tokens": 0}}
    out: list[str] = [_event("message_start", {"type": "message_start", "message": head})]
    blocks: Iterable[Mapping[str, Any]] = message["content"]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            out.append(_event("content_block_start", {"type": "content_block_start", "index": i,
                                                      "content_block": {"type": "text", "text": ""}}))
            out.append(_event("content_block_delta", {"type": "content_block_delta", "index": i,
                                                      "delta": {"type": "text_delta", "text": block["text"]}}))
        else:
            out.append(_event("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}))
            out.append(_event("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}}))
        out.append(_event("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(_event("message_delta", {"type": "message_delta",
                                        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                        "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
    out.append(_event("message_stop", {"type": "message_stop"}))
    return "".join(out).encode()
