#!/usr/bin/env python3
"""A stand-in for a coding-agent CLI (installed as ``claude``, ``codex``, ``gemini`` or
``opencode`` by the end-to-end tests), run by anpord exactly as the real CLI would be.

It refuses a command line without the flags its CLI needs to run unattended and stream JSON (exit
2, as a CLI does on a usage error), answers ``--version`` (or hangs, with ``STANDIN_VERSION_HANGS`` set), prints one
``standin.report`` line saying what it got (argv,
prompt from stdin, resume id, model, environment, instruction files in HOME), then acts out what
the prompt asks for:

- ``replay:<fixture>`` replays that recorded stream (a file under ``streams/`` beside this
  script), with the recording's working folder replaced by the current one, its session id by
  the one being resumed, and the files its write tools created written for real;
- ``cut:<fixture>`` replays the first half of it, then dies (exit 1, a message on stderr);
- ``truncate:<fixture>`` replays it with its last line cut in the middle;
- ``flood:<fixture>`` prints 4 MB of noise first;
- ``strange:<fixture>`` mixes in event types no CLI has sent yet;
- ``hang:<token>`` starts a detached ``sleep <token>`` and never ends;
- ``stderr:<file>`` prints that recorded stderr (a file under ``streams/``) and exits 1, as the
  CLI did.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time

NAME = os.path.basename(sys.argv[0])
STREAMS = os.path.join(os.path.dirname(os.path.realpath(__file__)), "streams")
REQUIRED = {
    "claude": ["-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"],
    "codex": ["exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"],
    "gemini": ["--output-format", "stream-json", "--approval-mode=yolo"],
    "opencode": ["run", "--format", "json"],
}
VERSIONS = {"claude": "2.1.197 (Claude Code)", "codex": "codex-cli 0.171.0", "gemini": "0.61.0",
            "opencode": "1.17.20"}
RESUME_FLAG = {"claude": "--resume", "codex": "resume", "gemini": "--resume", "opencode": "--session"}
INSTRUCTIONS = (".claude/CLAUDE.md", ".codex/AGENTS.md", ".gemini/GEMINI.md", ".config/opencode/AGENTS.md")
# Credentials are reported by a digest of their value, never the value.
KEYS_SHOWN = ("CODEX_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
              "GEMINI_API_KEY", "GOOGLE_API_KEY", "CANNED_API_KEY")
ENV_SHOWN = ("IS_SANDBOX", "GEMINI_CLI_TRUST_WORKSPACE", "OPENCODE_PERMISSION", "PROFILE_TONE", "TONE")
# The working folders the recordings were made in.
RECORDED_FOLDERS = ("/tmp/rec/cl/ws", "/tmp/rec/gem/ws", "/private/tmp/codex-research-test")
SESSION_KEYS = re.compile(r'"(?:session_id|thread_id|sessionID)"\s*:\s*"([^"]+)"')


def value_after(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv and argv.index(flag) + 1 < len(argv) else None


def emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def write_files(obj: dict) -> None:
    """Do what the recorded write tools did, so the workspace changes as with the real CLI."""
    if obj.get("type") == "assistant":
        for block in obj.get("message", {}).get("content", []):
            if isinstance(block, dict) and block.get("name") == "Write":
                write(block["input"]["file_path"], block["input"].get("content", ""))
    elif obj.get("type") == "tool_use" and obj.get("tool_name") == "write_file":
        write(obj["parameters"]["file_path"], obj["parameters"].get("content", ""))
    elif obj.get("type") == "item.completed" and obj.get("item", {}).get("type") == "file_change":
        for change in obj["item"].get("changes", []):
            if change.get("kind") == "add":
                write(change["path"], "")


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def stream(fixture: str, resume: str | None) -> list[str]:
    with open(os.path.join(STREAMS, fixture)) as f:
        text = f.read()
    for folder in RECORDED_FOLDERS:
        text = text.replace(folder, os.getcwd())
    recorded = SESSION_KEYS.search(text)
    if resume and recorded and recorded.group(1) != resume:
        text = text.replace(recorded.group(1), resume)
    return [line for line in text.splitlines() if line.strip()]


def replay(lines: list[str]) -> None:
    for line in lines:
        try:
            write_files(json.loads(line))
        except ValueError:
            pass
        emit(line)


def main() -> int:
    argv = sys.argv[1:]
    if argv == ["--version"]:
        if os.environ.get("STANDIN_VERSION_HANGS"):
            time.sleep(3600)
        print(VERSIONS[NAME])
        return 0
    missing = [flag for flag in REQUIRED[NAME] if flag not in argv]
    if missing:
        print(f"{NAME}: error: missing {' '.join(missing)}", file=sys.stderr)
        return 2
    prompt = sys.stdin.read()
    resume = value_after(argv, RESUME_FLAG[NAME])
    home = os.environ.get("HOME", "")
    files = {}
    for rel in INSTRUCTIONS:
        path = os.path.join(home, rel)
        if os.path.isfile(path):
            with open(path) as f:
                files[rel] = f.read()
    emit(json.dumps({
        "type": "standin.report", "argv": argv, "prompt": prompt, "resume": resume,
        "model": value_after(argv, "--model"), "cwd": os.getcwd(), "home": home,
        "instructions": files, "env": {k: os.environ[k] for k in ENV_SHOWN if k in os.environ},
        "keys": {k: hashlib.sha256(os.environ[k].encode()).hexdigest()[:16]
                 for k in KEYS_SHOWN if os.environ.get(k)},
    }))
    if NAME == "gemini" and "--debug" in argv:
        # What gemini 0.61's --debug prints on stderr, among its own notes.
        print("[PolicyEngine.check] Validating shell command: 1 parts", file=sys.stderr)
        print("Ripgrep is not available. Falling back to GrepTool.", file=sys.stderr)
        print("[MESSAGE_BUS] publish: {\"type\":\"tool-calls-update\"}", file=sys.stderr)
        sys.stderr.flush()
    verb, _, arg = prompt.strip().partition(":")
    arg = arg.split()[0] if arg.split() else ""
    if verb == "hang":
        subprocess.Popen(["sleep", arg], start_new_session=True)
        emit(json.dumps({"type": "system", "subtype": "init", "session_id": "hanging"}))
        while True:
            time.sleep(1)
    if verb == "stderr":
        with open(os.path.join(STREAMS, arg)) as f:
            sys.stderr.write(f.read())
        return 1
    lines = stream(arg, resume)
    if verb == "replay":
        replay(lines)
    elif verb == "cut":
        replay(lines[: len(lines) // 2])
        print(f"{NAME}: connection reset by peer", file=sys.stderr)
        return 1
    elif verb == "truncate":
        replay(lines[:-1])
        emit(lines[-1][: len(lines[-1]) // 2])
    elif verb == "flood":
        noise = "x" * 99
        for _ in range(40_000):
            sys.stdout.write(noise + "\n")
        replay(lines)
    elif verb == "strange":
        emit(json.dumps({"type": "telemetry.v9", "payload": {"n": 1}}))
        emit(json.dumps({"no_type": True}))
        emit('["a", "list", "not an object"]')
        replay(lines)
    else:
        print(f"{NAME}: the stand-in does not know {verb!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
