"""argparse with one-line errors (exit 2), shared by every command."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

__all__ = ["Parser", "port_number", "positive_int", "positive_float", "trials_arg"]


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}{self._suggestion(message)} (see --help)", file=sys.stderr)
        raise SystemExit(2)

    def _suggestion(self, message: str) -> str:
        """``; did you mean --trials?`` for a mistyped flag."""
        import difflib

        if not message.startswith("unrecognized arguments:"):
            return ""
        known = [s for s in self._option_string_actions if s.startswith("--")]
        words = message.split(":", 1)[1].split()
        if "--json" in known and any(w.split("=", 1)[0] == "--format" for w in words):
            # A newcomer's guess for JSON output (promptfoo, inspect-ai...), or import's flag.
            return "; JSON output is --json (--format belongs to `anpord eval import`)"
        hints = []
        for word in words:
            flag = word.split("=", 1)[0]
            if flag.startswith("-"):
                close = difflib.get_close_matches(flag if flag.startswith("--") else "-" + flag, known, n=1)
                if close:
                    hints.append((flag, close[0]))
        if len(hints) == 1:
            return f"; did you mean {hints[0][1]}?"
        return "; did you mean " + ", ".join(f"{good} (for {bad})" for bad, good in hints) + "?" if hints else ""


def trials_arg(text: str) -> int | str:
    """``--trials``: N, ``auto`` or ``MIN..MAX`` (kept as text; the plan parses it)."""
    from ..stats._trial_count import parse_trials

    try:
        parsed = parse_trials(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return parsed if isinstance(parsed, int) else text.strip()


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def dollars(text: str) -> float:
    """A positive amount of US dollars (``0.50``, ``$2``)."""
    try:
        value = float(text.strip().removeprefix("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number of US dollars, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of US dollars, got {text!r}")
    return value


def token_count(text: str) -> int:
    """A positive whole number of tokens (``10000``, ``10_000``, ``10,000``)."""
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive whole number of tokens, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number of tokens, got {text!r}")
    return value


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number from 0 to 65535, got {text!r}")
    return value
