#!/usr/bin/env python3
"""A tiny notes agent that speaks anpord's command protocol (docs/command-protocol.md).

It has no model: it understands three requests, so the example runs anywhere, offline.

    note <text>     append a line to NOTES.md in the workspace
    list            list the workspace's files (runs `ls -1`)
    delete <file>   delete a file, after asking for approval (an input request)

Every action is reported as event lines on stdout; the answer is a message.completed event.
Only the standard library is used, so any python3 runs it (also inside a bwrap sandbox).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

WORKSPACE = Path(os.environ.get("ANPORD_WORKSPACE", "."))


def emit(type_: str, **data: object) -> None:
    print(json.dumps({"type": type_, **data}), flush=True)


def answers() -> dict:
    """Answers to our earlier input requests (present when this is a resumed run)."""
    path = os.environ.get("ANPORD_INPUT_RESPONSES_FILE")
    if not path or not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return {a["request_id"]: a.get("option_id", a.get("value")) for a in json.load(f)}


def note(text: str) -> str:
    emit("tool.called", call_id="c1", name="append_note", input={"text": text})
    with open(WORKSPACE / "NOTES.md", "a", encoding="utf-8") as f:
        f.write(f"- {text}\n")
    emit("tool.result", call_id="c1", name="append_note", output="ok", status="completed")
    emit("files.changed", paths=["NOTES.md"])
    return f"Noted: {text}"


def list_files() -> str:
    done = subprocess.run(["ls", "-1"], check=False, cwd=WORKSPACE, capture_output=True, text=True)
    emit("command.completed", command="ls -1", exit_code=done.returncode, output=done.stdout)
    names = done.stdout.split()
    return "Files: " + (", ".join(names) if names else "none")


def delete(name: str) -> str | None:
    request_id = f"delete:{name}"
    answer = answers().get(request_id)
    if answer is None:
        # Ask, then exit: anpord runs us again with the answer in ANPORD_INPUT_RESPONSES_FILE.
        emit(
            "input.requested",
            request_id=request_id,
            prompt=f"Delete {name}?",
            options=[{"id": "approve", "label": "Delete it"}, {"id": "deny", "label": "Keep it"}],
            tool_name="delete_file",
            input={"path": name},
        )
        return None
    if answer != "approve":
        return f"Kept {name}."
    emit("tool.called", call_id="c1", name="delete_file", input={"path": name})
    target = WORKSPACE / name
    if not target.resolve().is_relative_to(WORKSPACE.resolve()) or not target.is_file():
        emit(
            "tool.result",
            call_id="c1",
            name="delete_file",
            output=None,
            status="failed",
            error=f"no such file: {name}",
        )
        return f"There is no {name} to delete."
    target.unlink()
    emit("tool.result", call_id="c1", name="delete_file", output="deleted", status="completed")
    return f"Deleted {name}."


def main() -> int:
    prompt = os.environ.get("ANPORD_PROMPT")
    if prompt is None:  # too long for the environment: the file always has it
        prompt = Path(os.environ["ANPORD_PROMPT_FILE"]).read_text(encoding="utf-8")
    command, _, rest = prompt.strip().partition(" ")
    if command == "note" and rest:
        reply = note(rest)
    elif command == "list":
        reply = list_files()
    elif command == "delete" and rest:
        reply = delete(rest.strip())
    else:
        with open(os.environ["ANPORD_HISTORY_FILE"], encoding="utf-8") as f:
            turns = sum(1 for m in json.load(f) if m["role"] == "user")
        reply = f"I can note <text>, list, or delete <file> (this is turn {turns})."
    if reply is not None:
        emit("usage", input_tokens=len(prompt.split()), output_tokens=len(reply.split()), cost=0)
        emit("message.completed", role="assistant", text=reply)
    print("notes agent done", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
