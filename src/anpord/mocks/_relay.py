"""The relay: what a CLI mock's program and an MCP mock's server process really are.

A standard-library script run with ``-I -S`` (no site, nothing of anpord imported: it starts in
a few tens of milliseconds), so that the mock's logic and its records stay in the runner. It
connects to the trial's relay port on ``127.0.0.1`` (bridged in where the sandbox closes the
network), sends one JSON line saying which mock it is, then:

- ``cli``: its argv, stdin (unless a terminal, or a pipe with nothing for half a second) and cwd; it prints the answer's stdout and stderr
  and exits with its code;
- ``mcp``: it copies stdin to the runner and the runner's answers to stdout, until either ends.
"""

from __future__ import annotations

__all__ = ["RELAY_SOURCE"]

# Free of anything newer than the oldest python3 a system may have (see sandboxes/_bridge).
RELAY_SOURCE = r"""
import json, os, socket, sys, threading
port, wait, kind, name = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    conn = socket.create_connection(("127.0.0.1", port), timeout=30)
except OSError as exc:
    sys.stderr.write("%s: the mock is not reachable: %s\n" % (name, exc))
    sys.exit(70)
conn.settimeout(None)
if kind == "cli":
    data = b""
    try:
        # Read unless a terminal; a pipe nobody writes to (a stdin inherited from a parent that
        # never closes it) is given half a second to start, never waited on for ever.
        if not os.isatty(0):
            import select
            if select.select([0], [], [], 0.5)[0]:
                data = sys.stdin.buffer.read()
    except (OSError, ValueError, AttributeError):
        pass
    def text(arg):
        # An argument, or a folder's name, need not be UTF-8: its undecodable bytes are sent as
        # backslash escapes ("\\xff"), so the record stays text and a check still reads the rest.
        return os.fsencode(arg).decode("utf-8", "backslashreplace")
    try:
        cwd = text(os.getcwd())
    except OSError:
        cwd = ""
    head = {"kind": "cli", "mock": name, "argv": [text(a) for a in sys.argv[5:]], "cwd": cwd,
            "stdin": data.decode("utf-8", "replace")}
    conn.sendall(json.dumps(head).encode() + b"\n")
    # The answer comes from the runner's event loop. An async Python agent that runs this
    # program with a blocking call (subprocess.run) holds that loop until the program ends: the
    # wait is bounded by the trial's time, so that is a slow failure saying why, not a hang.
    conn.settimeout(wait)
    reader = conn.makefile("rb")
    try:
        line = reader.readline()
    except socket.timeout:
        sys.stderr.write("%s: no answer from anpord within %gs: the runner's event loop is held, as it is "
                         "when an async Python agent runs this program with subprocess.run or another "
                         "blocking call; run it with asyncio.create_subprocess_exec or in asyncio.to_thread\n"
                         % (name, wait))
        sys.exit(70)
    if not line:
        sys.stderr.write("%s: the mock closed without answering\n" % name)
        sys.exit(70)
    answer = json.loads(line.decode("utf-8"))
    sys.stdout.write(answer.get("stdout", ""))
    sys.stdout.flush()
    sys.stderr.write(answer.get("stderr", ""))
    sys.stderr.flush()
    sys.exit(int(answer.get("exit_code", 0)))
conn.sendall(json.dumps({"kind": "mcp", "mock": name}).encode() + b"\n")

def upstream():
    try:
        while True:
            chunk = os.read(0, 65536)
            if not chunk:
                break
            conn.sendall(chunk)
    except OSError:
        pass
    try:
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        pass

threading.Thread(target=upstream, daemon=True).start()
out = sys.stdout.buffer
try:
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        out.write(chunk)
        out.flush()
except OSError:
    pass
"""
