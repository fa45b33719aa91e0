"""``anpord harnesses``: which coding-agent CLIs are installed, their versions, what each needs.

For each CLI: where it is (on PATH, and wherever the evals config's variants point: a
``claude:/path`` spec or ``options={"executable": ...}``), its version (``--version``, all run at
once, each with a timeout), the sign-in variables it takes (and which are set here), and the
command line a turn runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any

from ._args import Parser, positive_float

__all__ = ["build_parser", "main"]

DESCRIPTION = """Show which coding-agent CLIs (claude, codex, gemini, opencode) are installed — on
PATH or where the evals config's variants point — their versions, the sign-in variables each
takes (declare them as Variant(secrets=[...])) and the command line each turn runs."""


def build_parser() -> Parser:
    p = Parser(prog="anpord harnesses", description=DESCRIPTION)
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.add_argument(
        "--timeout",
        type=positive_float,
        default=10.0,
        metavar="S",
        help="seconds each --version may take (default: 10)",
    )
    return p


@dataclass
class Found:
    """One copy of a CLI: where it is, who asked for it, what ``--version`` said."""

    path: str
    source: str  # "PATH", or the variant that points at it
    version: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "source": self.source,
            "version": self.version,
            "error": self.error,
        }


@dataclass
class Entry:
    name: str
    copies: list[Found] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # configured executables that are not there


def _configured(names: set[str]) -> tuple[list[tuple[str, str, str]], str | None]:
    """``(cli, executable, variant label)`` for each variant of the evals config (if there is one
    here) that runs a coding CLI from somewhere else than its default name; and a note when the
    config could not be read."""
    from .._errors import UsageError
    from .._project import find_root

    try:
        root = find_root([])
    except UsageError:
        return [], None
    from ..runner import load_config

    try:
        config = load_config(root)
    except UsageError as exc:
        return [], f"the evals config was not read: {exc}"
    except Exception as exc:  # noqa: BLE001 - a broken config must not stop this listing
        return [], f"the evals config was not read: {type(exc).__name__}: {exc}"
    out = []
    for v in config.variants:
        spec = v.harness or config.harness or ""
        cli, _, path = spec.partition(":")
        if cli not in names:
            continue
        exe = v.options.get("executable") or path
        if isinstance(exe, str) and exe:
            if "/" in exe and not os.path.isabs(os.path.expanduser(exe)):
                exe = str(root.parent / exe)
            elif "/" not in exe:
                exe = shutil.which(exe, path=v.env.get("PATH")) or exe
            out.append((cli, os.path.expanduser(exe), f"variant {v.label}"))
    return out, None


async def _version(argv: list[str], timeout: float) -> tuple[str | None, str | None]:
    from ..harnesses.coding import parse_version

    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return None, f"could not run it: {exc.strerror or exc}"
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
        await proc.wait()
        return None, f"--version did not answer within {timeout:g}s"
    text = out.decode("utf-8", "replace").strip()
    version = parse_version(text)
    if proc.returncode != 0:
        last = text.splitlines()[-1] if text else ""
        return None, f"--version exited {proc.returncode}" + (f": {last}" if last else "")
    return version, None if version else f"no version in its output: {text[:80]!r}"


async def _versions(found: list[Found], timeout: float) -> None:
    async def one(f: Found) -> None:
        f.version, f.error = await _version([f.path, "--version"], timeout)

    await asyncio.gather(*(one(f) for f in found))


def _survey(timeout: float) -> tuple[list[Entry], str | None]:
    from ..harnesses.coding import CODING_CLIS

    entries = {name: Entry(name) for name in CODING_CLIS}
    for name, cli in CODING_CLIS.items():
        path = shutil.which(cli.info.executable)
        if path:
            entries[name].copies.append(Found(path, "PATH"))
    configured, note = _configured(set(CODING_CLIS))
    for name, exe, source in configured:
        entry = entries[name]
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            entry.missing.append(f"{exe} ({source})")
            continue
        same = next(
            (f for f in entry.copies if os.path.realpath(f.path) == os.path.realpath(exe)), None
        )
        if same is not None:
            same.source += f", {source}"
        else:
            entry.copies.append(Found(exe, source))
    asyncio.run(_versions([f for e in entries.values() for f in e.copies], timeout))
    return list(entries.values()), note


def _describe(entry: Entry) -> dict[str, Any]:
    from ..harnesses.coding import CODING_CLIS

    cli = CODING_CLIS[entry.name]
    info = cli.info
    command = cli.command(prompt_file="PROMPT_FILE", model="MODEL").shell()
    return {
        "name": info.name,
        "title": info.title,
        "installed": bool(entry.copies),
        "copies": [f.to_dict() for f in entry.copies],
        "missing": entry.missing,
        "package": info.package,
        "install": info.install_command,
        "credentials": [list(names) for names in info.credentials],
        "credentials_set": sorted(
            {n for names in info.credentials for n in names if os.environ.get(n)}
        ),
        "credential_files": list(info.credential_files),
        # Set here, so passed to the CLI's trials as secrets without being declared.
        "secrets_passed": [n for n in info.secret_variables if os.environ.get(n)],
        "command": command,
        "notes": list(info.notes),
    }


def _text(found: list[dict[str, Any]]) -> str:
    lines = []
    for d in found:
        head = f"{d['name']:<9} {d['title']}"
        lines.append(head)
        if not d["copies"]:
            lines.append(f"  not installed: {d['install']}")
        for c in d["copies"]:
            version = c["version"] or f"version unknown ({c['error']})"
            lines.append(f"  {version:<10} {c['path']}  [{c['source']}]")
        for m in d["missing"]:
            lines.append(f"  missing: {m}")
        ways = " | ".join(
            " + ".join(f"{n} (set)" if n in d["credentials_set"] else n for n in names)
            for names in d["credentials"]
        )
        lines.append(f"  sign in: {ways}")
        if d["secrets_passed"]:
            names = ", ".join(d["secrets_passed"])
            lines.append(f"  passes:  {names} (set here: reaches its trials as a secret)")
        else:
            first = next((n for n in d["credentials_set"]), d["credentials"][0][0])
            lines.append(f"  declare: Variant(harness={d['name']!r}, secrets=[{first!r}])")
        lines.append(f"  runs:    {d['command']}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    entries, note = _survey(args.timeout)
    found = [_describe(e) for e in entries]
    if note:
        print(f"anpord harnesses: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps({"harnesses": found}, indent=2))
    else:
        print(_text(found))
        installed = sum(1 for d in found if d["installed"])
        print(f"\n{installed} of {len(found)} installed")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
