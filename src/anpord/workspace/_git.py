"""A clone cache for ``repo(...)`` sources.

A repository is fetched shallowly (depth 1) at its ref once, into
``$ANPORD_CACHE_DIR/repos`` (default ``$XDG_CACHE_HOME/anpord`` or ``~/.cache/anpord``); each
trial then gets its own copy of that checkout. The cache key is the URL plus the *commit* the ref
resolves to (``git ls-remote`` / ``rev-parse``, once per process), so a branch that moved is
fetched again instead of served stale, and a pinned commit never needs the network twice.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
import threading
from pathlib import Path

from ._errors import SourceError

__all__ = ["GIT_TIMEOUT", "cache_root", "checkout"]

GIT_TIMEOUT = 300.0
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_memo: dict[tuple[str, str | None], Path] = {}
_memo_lock = threading.Lock()


def cache_root() -> Path:
    explicit = os.environ.get("ANPORD_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "anpord"


def _git(args: list[str], what: str, cwd: str | None = None) -> str:
    env = dict(os.environ)
    # Never wait for a password or a host-key prompt: fail and say so.
    env.update(GIT_TERMINAL_PROMPT="0", GCM_INTERACTIVE="never")
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    try:
        done = subprocess.run(
            ["git", "-c", "advice.detachedHead=false", *args],
            check=False,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
        )
    except FileNotFoundError:
        if cwd is not None and not os.path.isdir(cwd):
            raise SourceError(f"{what}: {cwd} does not exist") from None
        raise SourceError(f"{what}: git is not installed") from None
    except subprocess.TimeoutExpired:
        raise SourceError(f"{what}: git {args[0]} timed out after {GIT_TIMEOUT:g}s") from None
    if done.returncode != 0:
        lines = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
        cause = next((ln for ln in lines if ln.startswith("fatal:")), lines[-1] if lines else "")
        raise SourceError(f"{what}: git {args[0]} failed: {cause or f'exit {done.returncode}'}")
    return done.stdout


def _resolve(url: str, ref: str | None, local: bool, what: str) -> str | None:
    """The commit ``ref`` names now, or None when only a fetch can tell (a short SHA)."""
    if ref is not None and _SHA.fullmatch(ref):
        return ref
    if local:
        out = _git(
            ["rev-parse", "--verify", "--end-of-options", f"{ref or 'HEAD'}^{{commit}}"],
            what,
            cwd=url.removeprefix("file://"),
        )
        return out.strip()
    out = _git(["ls-remote", "--", url, ref or "HEAD"], what)
    refs: dict[str, str] = {}
    for line in out.splitlines():
        sha, _, name = line.partition("\t")
        refs[name] = sha
    if ref is None:
        return refs.get("HEAD")
    for name in (f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}", f"refs/heads/{ref}", ref):
        if name in refs:
            return refs[name]
    if not refs:
        raise SourceError(f"{what}: no ref {ref!r} in {url}")
    return None


def _fetch(url: str, ref: str | None, into: Path, what: str) -> None:
    _git(["init", "-q", "--template=", str(into)], what)
    fetch = ["fetch", "-q", "--depth", "1", "--no-tags", "--", url]
    _git([*fetch, *([ref] if ref else [])], what, cwd=str(into))
    _git(["checkout", "-q", "--detach", "FETCH_HEAD"], what, cwd=str(into))


def checkout(url: str, ref: str | None, *, local: bool, what: str) -> Path:
    """A cached checkout of ``url`` at ``ref`` (a folder to copy from, never to change)."""
    with _memo_lock:
        hit = _memo.get((url, ref))
    if hit is not None and hit.is_dir():
        return hit
    commit = _resolve(url, ref, local, what)
    key = hashlib.sha256(f"{url}\n{commit or ref}".encode()).hexdigest()[:32]
    repos = cache_root() / "repos"
    repos.mkdir(parents=True, exist_ok=True)
    final = repos / key
    if not final.is_dir():
        import fcntl

        # One fetch per key across threads and processes; the loser finds it done.
        with open(repos / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not final.is_dir():
                tmp = Path(tempfile.mkdtemp(prefix=f"{key}.tmp-", dir=repos))
                try:
                    _fetch(url, ref, tmp, what)  # by name: not every server serves a bare SHA
                    os.rename(tmp, final)
                except BaseException:
                    from ._fill import remove_tree

                    remove_tree(tmp)
                    raise
    with _memo_lock:
        _memo[(url, ref)] = final
    return final
