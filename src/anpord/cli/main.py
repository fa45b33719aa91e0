"""Entry point: ``anpord <command> ...``. Keep this module's imports tiny: it runs on every call."""

from __future__ import annotations

import importlib
import sys

USAGE = """usage: anpord <command> [options]

Evaluate AI agents the way a test runner checks code.

commands:
  eval [IDS_OR_PATHS...]   run eval cases against an agent (see `anpord eval --help`)
  eval import              turn an existing case file into a suite (see `anpord eval import --help`)
  audit [IDS...]           does the suite fail a broken agent? saboteurs stand in for it
  regrade RUN [IDS...]     decide a recorded run again with today's checks, without running agents
  init [DIR]               scaffold evals/ with a config and one example
  view                     browse the project's runs in a local web page (see `anpord view --help`)
  serve SPEC               serve a Python agent over the HTTP agent protocol (see `anpord serve --help`)
  harnesses                which coding-agent CLIs are installed, their versions, what each needs
  plugins                  every harness, sandbox, executor, importer and reporter anpord can load
  runs                     recent runs: id, when, totals, status
  show RUN [CASE]          a run's grid, or one trial in full
  compare [BASE] [CAND]    each cell of a run against its baseline (or another run)
  baseline set RUN         make every cell of RUN the baseline later runs are compared with
  flaky [--runs N]         the flakiest cells over recent runs, with their flake rates
  plan [RUN] [--effect D]  the smallest change a comparison can detect; what detecting D takes
  db rebuild               re-create the run store from the run folders

RUN is a run id, a unique prefix of one, or `latest`.

options:
  -h, --help               show this help
  --version                print the version
"""

# command → the module whose main(argv) runs it (imported only when that command runs)
COMMANDS = {
    "eval": ".eval_cmd",
    "audit": ".audit_cmd",
    "regrade": ".regrade_cmd",
    "init": ".init_cmd",
    "view": ".view_cmd",
    "serve": ".serve_cmd",
    "harnesses": ".harnesses_cmd",
    "plugins": ".plugins_cmd",
    "runs": ".runs_cmd",
    "show": ".show_cmd",
    "compare": ".compare_cmd",
    "baseline": ".baseline_cmd",
    "flaky": ".flaky_cmd",
    "plan": ".plan_cmd",
    "db": ".db_cmd",
}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "--version":
        from .._version import __version__

        print(f"anpord {__version__}")
        return 0
    if command == "eval" and rest[:1] == ["import"]:
        command, rest = "eval import", rest[1:]
    module = ".import_cmd" if command == "eval import" else COMMANDS.get(command)
    if module is None:
        import difflib

        close = difflib.get_close_matches(command, COMMANDS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        known = ", ".join(["eval", "eval import", *list(COMMANDS)[1:]])
        print(f"anpord: error: unknown command {command!r}{hint} (commands: {known})", file=sys.stderr)
        return 2
    _sweep_stale_sandboxes()
    entry_point = importlib.import_module(module, __package__).main
    return int(entry_point(rest))


def _sweep_stale_sandboxes() -> None:
    """Trial folders (and any process still in them) left by a runner killed with SIGKILL before
    its watchdog could clean up: every command removes them first. Never fails the command."""
    from ..sandboxes import sweep_stale

    sweep_stale()


def entry() -> None:
    # What a command prints may quote an agent's text holding a lone surrogate (half an emoji
    # cut off, bytes that were not UTF-8): written as its backslash escape, never a crash.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)  # a replaced stream may lack it
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    try:
        code = main()
    except BrokenPipeError:
        # The reader of stdout stopped early (`anpord show latest | head`): it has what it
        # wanted. Nothing more goes to the closed pipe, not even at the interpreter's exit.
        _quiet_stdout()
        code = 0
    except KeyboardInterrupt:
        # Interrupted before a run started (a run handles Ctrl-C itself and exits 130).
        print("anpord: interrupted", file=sys.stderr)
        code = 130
    raise SystemExit(code)


def _quiet_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    entry()
