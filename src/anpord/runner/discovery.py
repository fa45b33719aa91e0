"""Finding the evals root, the eval files the arguments name, and the cases they define."""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import marshal
import os
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any, Sequence

from ..authoring import DefinitionError, Eval, EvalConfig, Suite, define_eval_config
from .._errors import UsageError
from .._ids import slug
from .._project import CONFIG_NAME, EVAL_SUFFIX, find_root
from ..authoring._config import Variant
from ._rewrite import ASSERT_HELPERS, rewrite_asserts

__all__ = [
    "UsageError",
    "Project",
    "Case",
    "EvalFile",
    "find_project",
    "select_files",
    "load_file",
    "load_cases",
    "slug",
]



@dataclass
class Project:
    root: Path  # the evals root: the folder holding evals.config.py
    config: EvalConfig

    @property
    def folder(self) -> Path:
        """The project folder (the root's parent): ``.anpord/`` lives here."""
        return self.root.parent


@dataclass
class EvalFile:
    path: Path
    id: str  # path relative to the root, without .eval.py
    case_filter: set[str] | None = None  # ids of single cases asked for, else all
    cache_dir: Path | None = None  # where compiled eval files are cached

    @functools.cached_property
    def folder(self) -> Path:
        """Where relative paths in the file start (sources, send_file); read once per trial."""
        return self.path.parent


@dataclass
class Case:
    id: str
    file: EvalFile
    eval: Eval
    row: Any = None
    has_row: bool = False
    suite: Suite | None = None
    tags: tuple[str, ...] = ()

    @property
    def variants(self) -> tuple[Variant, ...]:
        return self.suite.variants if self.suite is not None else ()

    @property
    def source(self) -> Any:
        if self.eval.source is not None:
            return self.eval.source
        return self.suite.source if self.suite is not None else None


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# -- the root and its config -----------------------------------------------------------------


def _put_on_path(project_root: Path) -> None:
    for folder in (project_root.parent, project_root):
        s = str(folder)
        if s in sys.path:
            sys.path.remove(s)
        sys.path.insert(0, s)


def load_config(root: Path) -> EvalConfig:
    path = root / CONFIG_NAME
    module = _exec_module(path, "_anpord_evals_config", rewrite=False)
    values = [v for k, v in vars(module).items() if isinstance(v, EvalConfig) and not k.startswith("_")]
    if not values:
        if not path.read_text(encoding="utf-8", errors="replace").strip():
            return define_eval_config()
        raise UsageError(f"{_rel(path)}: binds no define_eval_config(...) value (write `config = define_eval_config()`)")
    if len(values) > 1:
        raise UsageError(f"{_rel(path)}: binds several define_eval_config(...) values; keep one")
    return values[0]


def find_project(args: Sequence[str]) -> Project:
    root = find_root(args)
    _put_on_path(root)
    return Project(root=root, config=load_config(root))


# -- selecting files -------------------------------------------------------------------------


def _file_id(root: Path, path: Path) -> str:
    rel = path.resolve().relative_to(root)
    return rel.as_posix()[: -len(EVAL_SUFFIX)]


def _all_files(folder: Path) -> list[Path]:
    return sorted(
        (p for p in folder.rglob(f"*{EVAL_SUFFIX}") if not any(part.startswith(".") for part in p.parts)),
        key=lambda p: p.as_posix(),
    )


def select_files(project: Project, args: Sequence[str]) -> list[EvalFile]:
    """Resolve arguments (file paths, directories, ids, id prefixes, case ids) to eval files."""
    root = project.root
    chosen: dict[Path, EvalFile] = {}

    def add(path: Path, case_id: str | None = None) -> None:
        path = path.resolve()
        ef = chosen.get(path)
        if ef is None:
            ef = chosen[path] = EvalFile(path=path, id=_file_id(root, path), case_filter=set(),
                                         cache_dir=project.folder / ".anpord" / "cache" / "code")
        if case_id is None:
            ef.case_filter = None
        elif ef.case_filter is not None:
            ef.case_filter.add(case_id)

    if not args:
        # As pytest does: run from inside the evals root, no argument means the current folder.
        here = Path.cwd().resolve()
        folder = here if here != root and here.is_relative_to(root) else root
        files = _all_files(folder)
        if not files and folder != root:
            raise UsageError(f"nothing to run: no *{EVAL_SUFFIX} file under {_rel(folder) or '.'}")
        for p in files:
            add(p)
    for arg in args:
        p = Path(arg)
        # A path outside the root that is also an id (./weather beside evals/weather) is the id.
        if p.exists() and (p.resolve().is_relative_to(root) or not _names_an_id(root, arg)):
            rp = p.resolve()
            if rp == root.parent:
                rp = root  # the project folder stands for everything under its evals root
            if not rp.is_relative_to(root):
                raise UsageError(f"{arg}: is outside the evals root {_rel(root)}")
            if rp.is_dir():
                files = _all_files(rp)
                if not files:
                    raise UsageError(f"{arg}: holds no *{EVAL_SUFFIX} files")
                for f in files:
                    add(f)
            elif rp.name.endswith(EVAL_SUFFIX):
                add(rp)
            else:
                raise UsageError(f"{arg}: is not an eval file (eval files end in {EVAL_SUFFIX})")
            continue
        ident = arg.strip("/")
        if (root / f"{ident}{EVAL_SUFFIX}").is_file():
            add(root / f"{ident}{EVAL_SUFFIX}")
        elif ident and (root / ident).is_dir():
            files = _all_files(root / ident)
            if not files:
                raise UsageError(f"{arg}: holds no *{EVAL_SUFFIX} files")
            for f in files:
                add(f)
        else:
            # A case id inside a fanned-out file: <file-id>/<key>.
            parent, _, _ = ident.rpartition("/")
            if parent and (root / f"{parent}{EVAL_SUFFIX}").is_file():
                add(root / f"{parent}{EVAL_SUFFIX}", ident)
            else:
                raise UsageError(f"unknown eval id or path: {arg} (see `anpord eval --list`)")
    return sorted(chosen.values(), key=lambda ef: ef.id)


def _names_an_id(root: Path, arg: str) -> bool:
    ident = arg.strip("/")
    if not ident:
        return False
    parent = ident.rpartition("/")[0]
    return (
        (root / f"{ident}{EVAL_SUFFIX}").is_file()
        or (root / ident).is_dir()
        or bool(parent and (root / f"{parent}{EVAL_SUFFIX}").is_file())
    )


# -- importing one file ----------------------------------------------------------------------


def _module_name(file_id: str) -> str:
    return "_anpord_eval_" + re.sub(r"\W", "_", file_id)


# A line that starts with `assert`: files without one skip the rewrite (and its AST walk).
_HAS_ASSERT = re.compile(r"^[ \t]*assert\b", re.MULTILINE)


def _code_cache_path(cache_dir: Path, path: Path, rewrite: bool) -> Path | None:
    from .._version import __version__

    try:
        st = path.stat()
    except OSError:
        return None
    key = f"{__version__}|{sys.version}|{path.resolve()}|{st.st_mtime_ns}|{st.st_size}|{rewrite}"
    return cache_dir / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".bin")


def _compile(path: Path, source: str, rewrite: bool) -> CodeType:
    try:
        if rewrite and _HAS_ASSERT.search(source):
            tree = rewrite_asserts(ast.parse(source, filename=str(path)), source)
            return compile(tree, str(path), "exec")
        # No assert to rewrite: compiling the text directly skips building Python AST objects,
        # several times faster on big generated suites.
        return compile(source, str(path), "exec")
    except SyntaxError as exc:
        raise UsageError(f"{_rel(path)}:{exc.lineno}: syntax error: {exc.msg}") from None


def _load_code(path: Path, rewrite: bool, cache_dir: Path | None) -> CodeType:
    """Compile (with asserts rewritten), reusing a cached code object keyed on the file's
    path, size and mtime, as Python does for .pyc files."""
    cached = _code_cache_path(cache_dir, path, rewrite) if cache_dir is not None else None
    if cached is not None:
        try:
            code = marshal.loads(cached.read_bytes())
            if isinstance(code, CodeType):
                return code
        except (OSError, ValueError, EOFError, TypeError):
            pass
    try:
        # As Python reads a module: a PEP 263 coding line or a BOM names the encoding (UTF-8
        # otherwise), and Windows line endings read as newlines.
        source = importlib.util.decode_source(path.read_bytes())
    except OSError as exc:
        raise UsageError(f"{_rel(path)}: cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        raise UsageError(f"{_rel(path)}: cannot decode: {exc}") from None
    code = _compile(path, source, rewrite)
    if cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(marshal.dumps(code))
            os.replace(tmp, cached)
        except OSError:
            pass  # a read-only project still runs, just without the cache
    return code


def _exec_module(path: Path, name: str, *, rewrite: bool, cache_dir: Path | None = None) -> ModuleType:
    code = _load_code(path, rewrite, cache_dir)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    if rewrite:
        module.__dict__.update(ASSERT_HELPERS)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except (DefinitionError, UsageError) as exc:
        sys.modules.pop(name, None)
        raise UsageError(f"{_rel(path)}: {exc}") from None
    except BaseException as exc:  # noqa: BLE001 - a user's import-time fault is one line, not a traceback
        sys.modules.pop(name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        where = _user_frame(exc, path)
        raise UsageError(f"{_rel(path)}{where}: {type(exc).__name__}: {exc}") from None
    return module


def _user_frame(exc: BaseException, path: Path) -> str:
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == str(path):
            return f":{frame.lineno}"
    return ""


def _eval_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, Eval) for v in value)


def load_file(ef: EvalFile) -> Eval | Suite:
    module = _exec_module(ef.path, _module_name(ef.id), rewrite=True, cache_dir=ef.cache_dir)
    public = [(k, v) for k, v in vars(module).items() if not k.startswith("_")]
    bound = [(k, v) for k, v in public if isinstance(v, (Eval, Suite))]
    if not bound:
        # A dataset written as a list of cases (`cases = [define_eval(...) for row in rows]`):
        # one case per element, ids from their own id= or their index, as a suite's.
        lists = [(k, v) for k, v in public if _eval_list(v)]
        if len(lists) == 1:
            return Suite(cases=tuple(lists[0][1]))
        if len(lists) > 1:
            names = ", ".join(k for k, _ in lists)
            raise UsageError(f"{_rel(ef.path)}: binds several lists of evals ({names}); keep exactly one")
        raise UsageError(
            f"{_rel(ef.path)}: binds no eval: define one public value with define_eval(...) or "
            "define_suite(...); for one case per row of a dataset, use @define_eval(each=rows) or "
            "bind a list of define_eval(...) values (cases = [define_eval(...) for row in rows])"
        )
    if len(bound) > 1:
        names = ", ".join(k for k, _ in bound)
        raise UsageError(f"{_rel(ef.path)}: binds several evals ({names}); keep exactly one public Eval or Suite")
    return bound[0][1]


def _keys(items: Sequence[Any], explicit: list[str | None]) -> list[str]:
    width = max(4, len(str(len(items) - 1)))
    return [k if k else f"{i:0{width}d}" for i, k in enumerate(explicit)]


def cases_of(ef: EvalFile, value: Eval | Suite) -> list[Case]:
    out: list[Case] = []
    if isinstance(value, Suite):
        for member in value.cases:
            if member.each is not None:
                raise UsageError(f"{_rel(ef.path)}: each= is not supported inside define_suite; use one define_eval(each=...) per file")
        explicit = [slug(c.id) if c.id is not None else None for c in value.cases]
        for member, key in zip(value.cases, _keys(value.cases, explicit)):
            out.append(Case(id=f"{ef.id}/{key}", file=ef, eval=member, suite=value,
                            tags=tuple(value.tags) + member.tags))
    elif value.each is not None:
        rows = list(value.each)
        if callable(value.id):
            try:
                explicit = [slug(value.id(row)) or None for row in rows]
            except Exception as exc:  # noqa: BLE001
                raise UsageError(f"{_rel(ef.path)}: id= function raised {type(exc).__name__}: {exc}") from None
        else:
            explicit = [None] * len(rows)
        for row, key in zip(rows, _keys(rows, explicit)):
            out.append(Case(id=f"{ef.id}/{key}", file=ef, eval=value, row=row, has_row=True, tags=value.tags))
    else:
        out.append(Case(id=ef.id, file=ef, eval=value, tags=value.tags))
    seen: dict[str, int] = {}
    for c in out:
        seen[c.id] = seen.get(c.id, 0) + 1
    dups = sorted(k for k, n in seen.items() if n > 1)
    if dups:
        raise UsageError(f"{_rel(ef.path)}: duplicate case ids: {', '.join(dups)}")
    if ef.case_filter is not None:
        missing = ef.case_filter - {c.id for c in out}
        if missing:
            raise UsageError(f"unknown eval id: {', '.join(sorted(missing))} (see `anpord eval --list`)")
        out = [c for c in out if c.id in ef.case_filter]
    return out


def load_cases(files: Sequence[EvalFile]) -> list[Case]:
    cases: list[Case] = []
    ids: dict[str, Path] = {}
    for ef in files:
        for case in cases_of(ef, load_file(ef)):
            if case.id in ids:
                raise UsageError(f"duplicate case id {case.id}: in {_rel(ids[case.id])} and {_rel(ef.path)}")
            ids[case.id] = ef.path
            cases.append(case)
    return cases


def filter_tags(cases: Sequence[Case], include: Sequence[str], exclude: Sequence[str]) -> list[Case]:
    out = list(cases)
    if include:
        out = [c for c in out if set(c.tags) & set(include)]
    if exclude:
        out = [c for c in out if not set(c.tags) & set(exclude)]
    return out

