"""``anpord eval --summary md PATH`` and ``--summary none``, and the summary appended to
``$GITHUB_STEP_SUMMARY`` (a GitHub Actions job page) when that is set."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = ["STEP_SUMMARY", "check_summary", "write_summaries"]

STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


def check_summary(args: argparse.Namespace) -> str | None:
    """Split ``--summary``'s words into the format, the path and any run targets that followed
    them (``--summary md out.md evals/``); resolve the path against the caller's folder. Returns
    the usage error, if any."""
    words: list[str] = args.summary or []
    args.summary_format, args.summary_path = None, None
    if not words:
        return None
    form, rest = words[0], words[1:]
    if form == "none":
        args.summary_format = "none"
    elif form == "md":
        if not rest:
            return "--summary md needs a PATH (`-` for stdout)"
        args.summary_format, path, rest = "md", rest[0], rest[1:]
        if path == "-":
            if getattr(args, "json", False):
                return "--summary md - and --json both print on stdout: give --summary a file"
            args.summary_path = "-"
        else:
            resolved = Path(path).expanduser().resolve()
            if not resolved.parent.is_dir():
                return f"--summary md {path}: folder {resolved.parent} does not exist"
            args.summary_path = resolved
    else:
        return f"--summary: expected md PATH or none, got {form!r}"
    args.targets = [*args.targets, *rest]
    return None


def _targets(args: argparse.Namespace) -> list[tuple[Path | str, str]]:
    """Where the summary goes, each with its mode: ``w`` (PATH, replaced) or ``a`` (the step
    summary, appended to); one file named both ways is appended to once."""
    if getattr(args, "summary_format", None) == "none":
        return []
    out: list[tuple[Path | str, str]] = []
    step = os.environ.get(STEP_SUMMARY)
    step_path = Path(step).expanduser().resolve() if step else None
    path = getattr(args, "summary_path", None)
    if path is not None and path != step_path:
        out.append((path, "w"))
    if step_path is not None:
        out.append((step_path, "a"))
    return out


def write_summaries(
    args: argparse.Namespace,
    summary: Any,
    results: Sequence[Any],
    redact: Callable[[str], str],
    out: TextIO,
    code: int,
) -> int:
    """Write the run's Markdown summary where asked; a summary that cannot be written is said
    in one line and makes the exit code 2 (the run itself is kept)."""
    targets = _targets(args)
    if not targets:
        return code
    from ..results._summary import markdown_summary

    status = "interrupted" if summary.interrupted else None
    text = redact(markdown_summary(summary.run_id, summary.totals, summary.cells, results,
                                   summary.comparison, status=status, redact=redact))
    for target, mode in targets:
        if target == "-":
            out.write(text)
            out.flush()
            continue
        try:
            with open(target, mode, encoding="utf-8") as f:
                f.write(text if mode == "w" else "\n" + text)
        except OSError as exc:
            what = f"${STEP_SUMMARY}" if mode == "a" else "--summary"
            print(f"anpord eval: cannot write {what} {target}: {exc.strerror or exc}", file=sys.stderr)
            code = 2
    return code
