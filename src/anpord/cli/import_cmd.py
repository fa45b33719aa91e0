"""``anpord eval import --format FORMAT PATH [--out FILE] [--force]`` (and, for ``dataset``,
``--input-column``, ``--expected-column``, ``--match``).

Reads a case file a team already wrote and writes a ``*.eval.py`` suite from it: to stdout, or
atomically to ``--out``. Notes and the one-line summary go to stderr. A refusal is exit 2 with
one line, ``<RefusalName>: <message>``, and nothing written.
"""

from __future__ import annotations

import argparse
import sys

from ._args import Parser

__all__ = ["build_parser", "main"]

_EPILOG = """\
formats:
  evals-json  one JSON file holding every case ({"skill_name", "evals": [...]})
  yaml        one YAML file per case (name, task, judge_context, max_steps), or a directory
              of them, read in sorted order
  promptfoo   a promptfooconfig.yaml (or a folder holding one): prompts x tests, vars,
              defaultTest, file:// and CSV tests, assertions, providers as variants
  openai-evals
              an OpenAI evals registry spec YAML (samples read from the registry's data/),
              or a samples JSONL of {"input", "ideal"}
  dataset     a JSONL or CSV file with an input column and an expected one

Mechanical assertions convert exactly; a check the author gave a model grader becomes a judge
with their words verbatim. Prose, code in another language and anything else become
placeholders that always fail, so the suite stays red until you write the checks they describe.
"""


def build_parser() -> Parser:
    parser = Parser(
        prog="anpord eval import",
        description="Turn a case file a team already wrote into a runnable suite.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--format",
        required=True,
        metavar="FORMAT",
        help="the shape of the case file: evals-json, yaml, promptfoo, openai-evals, dataset, "
        "or a plugin's format (anpord plugins)",
    )
    parser.add_argument(
        "--input-column",
        metavar="NAME",
        help="dataset: the column holding the prompt (default: input, question, prompt, ...)",
    )
    parser.add_argument(
        "--expected-column",
        metavar="NAME",
        help="dataset: the column holding the expected answer (default: target, answer, ...)",
    )
    parser.add_argument(
        "--match",
        choices=("equals", "includes", "judge"),
        help="dataset: how the answer is compared with the expected value (default: a "
        "placeholder naming it, since a dataset does not say)",
    )
    parser.add_argument(
        "path",
        metavar="PATH",
        help="the case file (or, for yaml, a directory; for promptfoo, a folder holding its config)",
    )
    parser.add_argument(
        "--out",
        metavar="FILE",
        help="where to write the suite (name it *.eval.py); it goes to stdout when omitted",
    )
    parser.add_argument("--force", action="store_true", help="overwrite --out if it already exists")
    return parser


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _write_stdout(text: str) -> None:
    # Bytes, so a terminal or pipe with a narrow encoding cannot garble or refuse the suite.
    data = text.encode("utf-8")
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(text)
    else:
        buffer.write(data)
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    """Run the command on the arguments that follow ``anpord eval import``; return the exit
    code: 0 imported, 2 refused or misused."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:  # the parser has printed help, or a one-line usage error
        return stop.code if isinstance(stop.code, int) else 2

    from anpord._registry import PluginError
    from anpord.importers import IMPORTERS, ImportRefusal, import_cases, summary_of, write_suite
    from anpord.importers._text import one_line

    if not IMPORTERS.known(args.format):
        # Worded as argparse words a bad choice: the formats are known only once plugins are read.
        _say(f"anpord eval import: error: argument --format: invalid choice: {args.format!r} "
             f"(choose from {', '.join(IMPORTERS.names())}) (see --help)")
        return 2

    options = {
        key: value
        for key, value in (
            ("input_column", args.input_column),
            ("expected_column", args.expected_column),
            ("match", args.match),
        )
        if value is not None
    }
    if options and args.format != "dataset":
        flags = ", ".join("--" + key.replace("_", "-") for key in options)
        verb = "applies" if len(options) == 1 else "apply"
        _say(f"anpord eval import: error: {flags} {verb} only to --format dataset")
        return 2
    try:
        suite = import_cases(args.format, args.path, **options)
        if args.out is not None:
            write_suite(args.out, suite, force=args.force)
    except ImportRefusal as refusal:
        _say(refusal.line())
        return 2
    except PluginError as exc:  # a plugin's format that does not load
        _say(f"anpord eval import: error: --format {args.format}: {exc}")
        return 2

    if args.out is None:
        try:
            _write_stdout(suite.source)
        except BrokenPipeError:  # e.g. piped into `head`: the reader has what it wanted
            sys.stderr.close()
            return 0
    for note in suite.notes:
        _say(one_line(note))
    if args.out is not None:
        _say(one_line(f"Wrote {args.out}"))
        if not args.out.endswith(".eval.py"):
            _say(
                one_line(f"{args.out} does not end in .eval.py, so `anpord eval` will not find it.")
            )
    _say(summary_of(suite.tally))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
