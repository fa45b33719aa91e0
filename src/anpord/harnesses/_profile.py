"""Profiles: what a variant gives an agent besides its model — a system prompt, files in its HOME
and workspace, environment variables and an install step.

``Variant(profile="terse")`` names the folder ``<evals root>/profiles/terse/``::

    profiles/terse/
      profile.yaml   optional: env (names to values), install (a shell command, or a list of
                     them), install_timeout (seconds, default 600), system (the system prompt's
                     file, default system.md), description
      system.md      the system prompt, when there is one
      home/          copied into the trial's HOME (~/.claude/settings.json, ~/.codex/config.toml…)
      workspace/     copied into the trial's workspace, over the case's source

Every file of the folder counts in the profile's hash, recorded on each trial, so two runs of one
profile name with different contents are told apart. Nothing in a profile may point outside it:
a link whose target is outside the folder, or a ``system:`` path leading out of it, is refused
(``ProfileError``), so a profile can never copy the host's files into a trial.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "PROFILES_DIR",
    "PROFILE_FILE",
    "Profile",
    "ProfileError",
    "check_profiles",
    "copy_profile_files",
    "find_profiles_dir",
    "load_profile",
]

PROFILES_DIR = "profiles"
PROFILE_FILE = "profile.yaml"
SYSTEM_FILE = "system.md"
INSTALL_TIMEOUT = 600.0
_KEYS = ("description", "env", "install", "install_timeout", "system")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class ProfileError(ValueError):
    """A profile cannot be used: missing, malformed, or pointing outside itself (one line)."""


@dataclass(frozen=True)
class Profile:
    name: str
    folder: Path
    hash: str  # a digest of every file in the folder (paths, modes, contents)
    env: Mapping[str, str] = field(default_factory=dict)
    install: tuple[str, ...] = ()
    install_timeout: float = INSTALL_TIMEOUT
    system_prompt: str | None = None
    files: int = 0  # how many files the folder holds

    def summary(self) -> dict[str, Any]:
        """What a trial records about it (the ``profile.applied`` event)."""
        return {"name": self.name, "hash": self.hash, "files": self.files}


def find_profiles_dir(name: str, project_dir: Path | None, evals_root: Path | None) -> Path:
    """The ``profiles`` folder that holds profile ``name``: the evals root's when it is known;
    else, of the folders under the project folder holding an ``evals.config.py``, the one whose
    ``profiles/<name>`` exists (the evals root is one of them)."""
    if evals_root is not None:
        return evals_root / PROFILES_DIR
    roots = _evals_roots(project_dir)
    holding = [r for r in roots if os.path.lexists(r / PROFILES_DIR / name)]
    if len(holding) > 1:
        listed = ", ".join(str(r / PROFILES_DIR) for r in holding)
        raise ProfileError(f"profile {name!r} is in several evals roots ({listed}): rename one")
    chosen = holding or roots
    if not chosen:
        raise ProfileError(f"profile {name!r}: no evals root (a folder with evals.config.py) found")
    return chosen[0] / PROFILES_DIR


def _evals_roots(project_dir: Path | None) -> list[Path]:
    if project_dir is None or not project_dir.is_dir():
        return []
    return sorted(d for d in project_dir.iterdir() if (d / "evals.config.py").is_file())


def load_profile(name: str, profiles_dir: Path) -> Profile:
    """Read and check profile ``name`` under ``profiles_dir``. Raises ``ProfileError``."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ProfileError(
            f"profile {name!r}: a profile is named by a folder under {profiles_dir} "
            "(letters, digits, '.', '_', '-')"
        )
    folder = profiles_dir / name
    if not os.path.lexists(folder):
        known = _names(profiles_dir)
        hint = f"; profiles there: {', '.join(known)}" if known else ""
        raise ProfileError(f"profile {name!r} not found: expected the folder {folder}{hint}")
    if os.path.islink(folder) or not folder.is_dir():
        raise ProfileError(f"profile {name!r}: {folder} must be a folder (not a link or a file)")
    files, digest = _walk(name, folder)
    settings = _settings(name, folder)
    system = settings.get("system", SYSTEM_FILE)
    prompt_path = _inside(name, folder, system, "system")
    if "system" in settings and not prompt_path.is_file():
        raise ProfileError(f"profile {name!r}: system: {system} is not a file in the profile")
    prompt = prompt_path.read_text(encoding="utf-8") if prompt_path.is_file() else None
    return Profile(
        name=name,
        folder=folder,
        hash=digest,
        env=settings.get("env", {}),
        install=settings.get("install", ()),
        install_timeout=settings.get("install_timeout", INSTALL_TIMEOUT),
        system_prompt=prompt if prompt and prompt.strip() else None,
        files=files,
    )


def check_profiles(profiles_dir: Path) -> list[Profile]:
    """Load every profile under ``profiles_dir`` (none when it does not exist): the first bad one
    raises ``ProfileError``."""
    return [load_profile(name, profiles_dir) for name in _names(profiles_dir)]


def _names(profiles_dir: Path) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(profiles_dir) if not e.name.startswith("."))
    except OSError:
        return []


def _walk(name: str, folder: Path) -> tuple[int, str]:
    """Count and hash every file, refusing links out of the profile, links to folders, and
    anything that is not a file, folder or link."""
    root = os.path.realpath(folder)
    digest = hashlib.sha256()
    count = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for entry in sorted(dirnames + filenames):
            path = os.path.join(dirpath, entry)
            rel = os.path.relpath(path, folder)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                target = os.path.realpath(path)
                if target != root and not target.startswith(root + os.sep):
                    raise ProfileError(
                        f"profile {name!r}: {rel} is a link to {os.readlink(path)}, outside the "
                        "profile (copy the file into the profile instead)"
                    )
                if os.path.isdir(target):
                    raise ProfileError(
                        f"profile {name!r}: {rel} is a link to a folder; copy the folder instead"
                    )
                if not os.path.isfile(target):
                    raise ProfileError(f"profile {name!r}: {rel} is a link to nothing")
                st = os.stat(target)
            if stat.S_ISDIR(st.st_mode):
                digest.update(b"d\0" + rel.encode("utf-8", "surrogateescape") + b"\0")
            elif stat.S_ISREG(st.st_mode):
                count += 1
                with open(path, "rb") as f:
                    content = hashlib.sha256(f.read()).digest()
                executable = b"x" if st.st_mode & 0o111 else b"-"
                digest.update(b"f\0" + rel.encode("utf-8", "surrogateescape") + b"\0")
                digest.update(executable + content)
            else:
                raise ProfileError(f"profile {name!r}: {rel} is not a file, folder or link")
    return count, digest.hexdigest()[:16]


def _inside(name: str, folder: Path, rel: Any, key: str) -> Path:
    if not isinstance(rel, str) or not rel.strip():
        raise ProfileError(f"profile {name!r}: {key}: must be a path inside the profile")
    root = os.path.realpath(folder)
    target = os.path.realpath(folder / rel)
    if os.path.isabs(rel) or (target != root and not target.startswith(root + os.sep)):
        raise ProfileError(f"profile {name!r}: {key}: {rel} points outside the profile")
    return Path(target)


def _settings(name: str, folder: Path) -> dict[str, Any]:
    path = folder / PROFILE_FILE
    if not path.is_file():
        return {}
    import yaml

    where = f"profile {name!r}: {PROFILE_FILE}"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        problem = (
            getattr(exc, "problem", None) or str(exc).strip().split("\n")[0] or type(exc).__name__
        )
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark is not None else ""
        raise ProfileError(f"{where}: not valid YAML: {problem}{line}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ProfileError(f"{where}: expected a mapping (env:, install:, system:)")
    unknown = sorted(str(k) for k in raw if k not in _KEYS)
    if unknown:
        raise ProfileError(f"{where}: unknown key {unknown[0]!r}; known keys: {', '.join(_KEYS)}")
    out: dict[str, Any] = {}
    if "env" in raw:
        env = raw["env"] or {}
        if not isinstance(env, dict):
            raise ProfileError(f"{where}: env: expected a mapping of names to values")
        out["env"] = {}
        for key, value in env.items():
            if (
                not isinstance(key, str)
                or not key
                or isinstance(value, (dict, list))
                or value is None
            ):
                raise ProfileError(
                    f"{where}: env: {key!r} must name a string, number or bool value"
                )
            out["env"][key] = str(value).lower() if isinstance(value, bool) else str(value)
    if "install" in raw:
        install = raw["install"]
        steps = [install] if isinstance(install, str) else install
        if not isinstance(steps, list) or not all(isinstance(s, str) and s.strip() for s in steps):
            raise ProfileError(f"{where}: install: expected a shell command or a list of them")
        out["install"] = tuple(steps)
    if "install_timeout" in raw:
        timeout = raw["install_timeout"]
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ProfileError(f"{where}: install_timeout: expected a positive number of seconds")
        out["install_timeout"] = float(timeout)
    if "system" in raw:
        out["system"] = raw["system"]
    return out


def copy_profile_files(profile: Profile, home: Path, workspace: Path) -> None:
    """Copy the profile's ``home/`` into ``home`` and ``workspace/`` into ``workspace``, merging
    with what is there (a profile's file replaces one of the same path). Links (checked to stay
    inside the profile when it was loaded) are copied as the files they point to."""
    for sub, dest in (("home", home), ("workspace", workspace)):
        src = profile.folder / sub
        if src.is_dir() and not src.is_symlink():
            _merge(src, dest)


def _merge(src: Path, dest: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        target_dir = dest if rel == "." else dest / rel
        target_dir.mkdir(parents=True, exist_ok=True)
        for name in filenames:
            target = target_dir / name
            if target.is_symlink() or (target.exists() and not target.is_file()):
                raise ProfileError(f"cannot copy {name} from the profile over {target}")
            shutil.copyfile(os.path.join(dirpath, name), target)
            mode = os.stat(os.path.join(dirpath, name)).st_mode
            os.chmod(target, (mode & 0o777) | 0o600)
