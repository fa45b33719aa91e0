"""Entry point: ``anpord <command> ...``. Keep this module's imports tiny: it runs on every call."""

from __future__ import annotations

import sys

USAGE = """usage: anpord <command> [options]

Evaluate AI agents the way a test runner checks code.

commands:
  eval [IDS_OR_PATHS...]   run eval cases against an agent (see `anpord eval --help`)
  eval import              turn an existing case file into a suite (see `anpord eval import --help`)
  init [DIR]               scaffold evals/ with a config and one example
  harnesses                which coding-agent CLIs are installed, their versions, what each needs

options:
  -h, --help               show this help
  --version                print the version
"""


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "--version":
        from .. import __version__

        print(f"anpord {__version__}")
        return 0
    if command == "eval":
        if rest[:1] == ["import"]:
            from .import_cmd import main as import_main

            return import_main(rest[1:])
        from .eval_cmd import main as eval_main

        return eval_main(rest)
    if command == "init":
        from .init_cmd import main as init_main

        return init_main(rest)
    if command == "harnesses":
        from .harnesses_cmd import main as harnesses_main

        return harnesses_main(rest)
    print(
        f"anpord: error: unknown command {command!r} (commands: eval, eval import, init, harnesses)",
        file=sys.stderr,
    )
    return 2


def entry() -> None:
    try:
        code = main()
    except KeyboardInterrupt:
        # Interrupted before a run started (a run handles Ctrl-C itself and exits 130).
        print("anpord: interrupted", file=sys.stderr)
        code = 130
    raise SystemExit(code)


if __name__ == "__main__":
    entry()
