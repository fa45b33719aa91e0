"""``anpord init [DIR]``: scaffold a working project — a config, one example case, a tiny agent.

Templates live in ``anpord/templates/init/`` (package data). Nothing that exists is overwritten
unless ``--force`` is given; every file is written atomically (temp file + rename).
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from .._fs import write_atomic
from ._args import Parser

__all__ = ["FILES", "build_parser", "main"]

DESCRIPTION = """Scaffold DIR (default: the current folder) with evals/evals.config.py, an example
case and a tiny example agent, so that `anpord eval` runs and passes straight away."""

# (template name, destination relative to DIR, required). A file that is not required is skipped
# when it already exists (a project with its own agents/__init__.py keeps it), even without --force.
FILES: tuple[tuple[str, str, bool], ...] = (
    ("evals_config.py.tmpl", "evals/evals.config.py", True),
    ("example_eval.py.tmpl", "evals/example.eval.py", True),
    ("agents_init.py.tmpl", "agents/__init__.py", False),
    ("agents_example.py.tmpl", "agents/example.py", True),
)


def build_parser() -> Parser:
    p = Parser(prog="anpord init", description=DESCRIPTION)
    p.add_argument(
        "dir", nargs="?", default=".", metavar="DIR", help="where to scaffold (default: .)"
    )
    p.add_argument("--force", action="store_true", help="overwrite files that already exist")
    return p


def _template(name: str) -> str:
    return (Path(__file__).resolve().parent.parent / "templates" / "init" / name).read_text(
        encoding="utf-8"
    )


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)


def _fail(message: str) -> int:
    print(f"anpord init: {message}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    target = Path(args.dir).expanduser()
    if target.exists() and not target.is_dir():
        return _fail(f"{args.dir} exists and is not a folder")

    todo: list[tuple[Path, str, bool]] = []
    kept: list[Path] = []
    for template, rel, required in FILES:
        dest = target / rel
        if dest.exists() or dest.is_symlink():
            if dest.is_dir():
                return _fail(f"{_shown(dest)} is a folder; remove it or choose another DIR")
            if not required:
                kept.append(dest)
                continue
            if not args.force:
                return _fail(
                    f"{_shown(dest)} already exists; not overwriting it (use --force to overwrite)"
                )
        todo.append((dest, template, dest.exists() or dest.is_symlink()))

    # Check every destination first, then write: a refusal leaves nothing half-scaffolded.
    written: list[tuple[Path, bool]] = []
    for dest, template, replacing in todo:
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            # No-clobber unless replacing with --force: a file that appeared since the check stays.
            write_atomic(dest, _template(template), overwrite=replacing)
        except OSError as exc:
            return _fail(f"cannot write {_shown(dest)}: {exc.strerror or exc}")
        written.append((dest, replacing))

    for path, replacing in written:
        print(f"{'replaced' if replacing else 'created '} {_shown(path)}")
    for path in kept:
        print(f"kept     {_shown(path)} (already there)")
    here = target.resolve() == Path.cwd().resolve()
    step = "anpord eval" if here else f"cd {shlex.quote(str(args.dir))} && anpord eval"
    print()
    print(f"Next: {step}")
    print("Runs are written to .anpord/ in the project folder (worth adding to .gitignore).")
    return 0
