"""Workspace archives: the workspace each trial left, kept compactly inside its run folder.

An archive is a folder of two files, whatever the number of trials:

- ``blobs.pack`` — file contents, each stored once (content-addressed by a BLAKE2b digest),
  deflate-compressed, and each trial's record: its manifest (the paths that differ from its
  base), deflated against the base's tree, then the new contents of the files it changed,
  deflated against the contents they replaced — so a one-line edit of a fixture file costs
  about the line;
- ``index.jsonl`` — one line per *base* (the workspace as it was before the agent ran: the
  case's fixture as filled, shared by every trial that started from the same tree: its tree and
  where its contents lie in the pack) and one short line per *trial* (where its record lies).

A thousand trials editing two files of a 200-file fixture store the fixture once and about
150 bytes a trial.

Everything is appended (a crash loses at most the lines being written; a reader skips a torn
line) and written owner-only: a workspace may hold whatever the agent wrote, secrets included,
and nothing in it is redacted. ``take_base`` and ``take`` are functions over a directory, so any
sandbox that can copy its workspace out can archive it. ``.git`` folders are kept like anything
else: a verifier may read the history.
"""

from __future__ import annotations

import base64
import hashlib
import json
import lzma
import os
import stat
import threading
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._records import ZDICT, compact, compress, decompress, expand, refs_of, to_json, tree_dict
from ._snapshot import walk

__all__ = [
    "ARCHIVE_DIR", "Archive", "ArchiveError", "BaseRef", "Tree", "open_archive", "read_archive", "take_base",
    "take_snapshot", "trial_key",
]

ARCHIVE_DIR = "workspaces"
PACK, INDEX = "blobs.pack", "index.jsonl"
# A file larger than this is not kept (its path is, marked as left out): a workspace holding a
# multi-gigabyte build output must not double the run folder.
MAX_FILE = 64 << 20
# A base's contents are compressed together in chunks this large (see Archive._store_solid).
SOLID_CHUNK = 4 << 20
SOLID_XZ = 16 << 20
# A new content up to this size is kept inside its trial's record (see ``Archive.take``).
INLINE = 1 << 20

# A tree: path (workspace-relative, ``/``-separated) → ("f", mode, digest) for a file,
# ("l", target) for a link, ("d", mode) for a folder (so empty ones come back), ("x", size) for
# a file too large to keep.
Entry = tuple[Any, ...]
Tree = dict[str, Entry]


class ArchiveError(Exception):
    """The archive cannot give back what was asked: missing, torn or not what was stored."""


def _digest(data: bytes) -> str:
    # 96 bits, URL-safe base64: collisions are out of reach within a run, and a digest is
    # written several times a trial, so its length is a share of the archive's size.
    return base64.urlsafe_b64encode(hashlib.blake2b(data, digest_size=12).digest()).decode("ascii")


def _read(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read()


@dataclass
class _Blob:
    offset: int
    length: int
    delta: str | None  # the digest of the content it was compressed against
    # A content kept inside a trial's record: the slice (start, size) of that record's contents
    # stream, which was deflated against the contents ``refs`` (digests) replaced.
    part: tuple[int, int] | None = None
    refs: tuple[str, ...] = ()
    codec: str | None = None  # a base's solid chunk: "xz" or "z" (see Archive._store_solid)


@dataclass(frozen=True)
class BaseRef:
    """A base as one trial took it: its id, and the stat signature of each file it read (so the
    trial's end reads only what changed since)."""

    id: str
    stats: Mapping[str, tuple[tuple[int, ...], Entry]] = field(default_factory=dict)


@dataclass
class Archive:
    """One run's archive (see the module docstring). Safe to share between a process's threads."""

    folder: Path
    blobs: dict[str, _Blob] = field(default_factory=dict)
    bases: dict[str, Tree] = field(default_factory=dict)
    trials: dict[str, dict[str, Any]] = field(default_factory=dict)  # key → {"base", "changed", "removed"}
    base_order: list[str] = field(default_factory=list)  # base ids in the order they were filed
    aliases: dict[str, str] = field(default_factory=dict)  # digest → the name an inline content was written under
    _chunks: dict[int, bytes] = field(default_factory=dict, repr=False)  # solid chunks read back, by offset
    problems: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # -- writing -----------------------------------------------------------------------------

    def _append(self, lines: list[dict[str, Any]], data: bytes = b"") -> None:
        """Blob bytes first, then the index lines naming them: a reader never sees a line whose
        blob is not written yet."""
        if data:
            fd = os.open(self.folder / PACK, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        if lines:
            text = "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines)
            fd = os.open(self.folder / INDEX, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, text.encode("utf-8", "surrogatepass"))
            finally:
                os.close(fd)

    def _pack_end(self) -> int:
        try:
            return os.stat(self.folder / PACK).st_size
        except FileNotFoundError:
            return 0

    def _scan(self, root: Path | str, known: Mapping[str, tuple[tuple[int, ...], Entry]] | None = None,
              ) -> tuple[Tree, dict[str, bytes], dict[str, tuple[tuple[int, ...], Entry]]]:
        """The tree under ``root``, the contents of its files not yet stored, and each file's
        stat signature. A file whose signature is in ``known`` (read moments ago, untouched
        since) is not read again."""
        tree: Tree = {}
        new: dict[str, bytes] = {}
        stats: dict[str, tuple[tuple[int, ...], Entry]] = {}
        for rel, st, path in walk(os.fspath(root)):
            mode = st.st_mode & 0o7777
            if stat.S_ISDIR(st.st_mode):
                tree[rel] = ("d", mode)
            elif stat.S_ISLNK(st.st_mode):
                try:
                    tree[rel] = ("l", os.readlink(path))
                except OSError:
                    continue
            elif stat.S_ISREG(st.st_mode):
                if st.st_size > MAX_FILE:
                    tree[rel] = ("x", st.st_size)
                    continue
                sig = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, mode)
                seen = known.get(rel) if known is not None else None
                if seen is not None and seen[0] == sig:
                    tree[rel] = seen[1]
                    stats[rel] = seen
                    continue
                data = _read(path)
                if data is None:
                    continue
                digest = _digest(data)
                tree[rel] = entry = ("f", mode, digest)
                stats[rel] = (sig, entry)
                if digest not in self.blobs:
                    new[digest] = data
        return tree, new, stats

    def _store(self, new: Mapping[str, bytes], tree: Tree, base: Tree | None) -> dict[str, list[Any]]:
        """Compress and append ``new`` blobs (under the lock); where each lies, for the index
        line that names them."""
        by_digest = {e[2]: p for p, e in tree.items() if e[0] == "f"}
        chunks: list[bytes] = []
        placed: dict[str, list[Any]] = {}
        offset = self._pack_end()
        for digest, data in new.items():
            if digest in self.blobs:
                continue
            delta, ref = None, None
            old = base.get(by_digest.get(digest, "")) if base is not None else None
            if old is not None and old[0] == "f" and old[2] in self.blobs:
                ref = self._blob_bytes(old[2])
            if ref is not None:
                delta = old[2]  # type: ignore[index]
                comp = zlib.compressobj(6, zlib.DEFLATED, -15, zdict=ref[-ZDICT:])
            else:
                comp = zlib.compressobj(6, zlib.DEFLATED, -15)
            packed = comp.compress(data) + comp.flush()
            self.blobs[digest] = _Blob(offset, len(packed), delta)
            placed[digest] = [offset, len(packed)] + ([delta] if delta else [])
            chunks.append(packed)
            offset += len(packed)
        if chunks:
            self._append([], b"".join(chunks))
        return placed

    def _store_solid(self, new: Mapping[str, bytes], tree: Tree) -> list[list[Any]]:
        """A base's new contents, compressed together (under the lock) — files of one code base
        share most of their words, so one stream is far smaller than one a file — in chunks of
        up to ``SOLID_CHUNK`` bytes (a reader decompresses a whole chunk for any file of it):
        xz for a base up to ``SOLID_XZ`` bytes, deflate (faster) beyond. Returns each chunk's
        ``[offset, length, codec, [[digest, size], ...]]``."""
        order = [e[2] for e in tree.values() if e[0] == "f" and e[2] in new and e[2] not in self.blobs]
        order = list(dict.fromkeys(order))
        codec = "xz" if sum(len(new[d]) for d in order) <= SOLID_XZ else "z"
        chunks: list[list[Any]] = []
        group: list[str] = []
        size = 0
        offset = self._pack_end()
        data = bytearray()
        for i, digest in enumerate(order):
            group.append(digest)
            size += len(new[digest])
            if size < SOLID_CHUNK and i + 1 < len(order):
                continue
            raw = b"".join(new[d] for d in group)
            packed = compress(raw, codec)
            start = 0
            for d in group:
                n = len(new[d])
                self.blobs[d] = _Blob(offset, len(packed), None, (start, n), codec=codec)
                start += n
            chunks.append([offset, len(packed), codec, [[d, len(new[d])] for d in group]])
            data += packed
            offset += len(packed)
            group, size = [], 0
        if data:
            self._append([], bytes(data))
        return chunks

    def take_base(self, root: Path | str) -> BaseRef:
        """Archive ``root`` as a base (the workspace before the agent ran). The same tree taken
        twice is stored once."""
        tree, new, stats = self._scan(root)
        base_id = _digest(json.dumps(sorted(tree.items()), ensure_ascii=False).encode("utf-8", "surrogatepass"))
        ref = BaseRef(base_id, stats)
        with self._lock:
            if base_id in self.bases:
                return ref
            chunks = self._store_solid(new, tree)
            self.bases[base_id] = tree
            self.base_order.append(base_id)
            self._append([{"base": base_id, "tree": tree, "solid": chunks}])
        return ref

    def take(self, root: Path | str, key: str, base: BaseRef | None = None) -> None:
        """Archive ``root`` as trial ``key``'s workspace at its end: what differs from its base
        (everything, without one).

        The trial's record is two deflate streams in the pack: its manifest (paths changed and
        removed), deflated against the base's tree, which holds its paths; then the new contents
        of files up to ``INLINE`` bytes, deflated against the contents they replaced — so a
        one-line edit costs about the line. Larger new contents are blobs of their own."""
        base_tree = self.bases.get(base.id) if base is not None else None
        tree, new, _ = self._scan(root, base.stats if base_tree is not None else None)  # type: ignore[union-attr]
        changed = {p: e for p, e in tree.items() if base_tree is None or base_tree.get(p) != e}
        removed = sorted(p for p in base_tree if p not in tree) if base_tree is not None else []
        with self._lock:
            inline: list[list[Any]] = []
            contents: list[bytes] = []
            for path, entry in changed.items():
                if entry[0] == "f" and entry[2] in new and len(new[entry[2]]) <= INLINE \
                        and entry[2] not in self.blobs:
                    data = new.pop(entry[2])
                    inline.append([path, len(data)])
                    contents.append(data)
            placed = self._store(new, tree, base_tree)
            manifest: dict[str, Any] = {}
            if changed:
                manifest["changed"] = changed
            if removed:
                manifest["removed"] = removed
            if inline:
                manifest["inline"] = inline
            if placed:
                manifest["blobs"] = placed
            comp = zlib.compressobj(9, zlib.DEFLATED, -15, zdict=tree_dict(base_tree))
            head = comp.compress(to_json(compact(manifest, base_tree, self.aliases))) + comp.flush()
            ref_bytes = b"".join(self._blob_bytes(d) or b"" for d in refs_of(inline, base_tree))
            comp = zlib.compressobj(9, zlib.DEFLATED, -15, zdict=ref_bytes[-ZDICT:] or b"\0")
            body = comp.compress(b"".join(contents)) + comp.flush()
            at = self._pack_end()
            line: dict[str, Any] = {"t": key, "at": at, "n": [len(head), len(body)]}
            if base_tree is not None:
                line["b"] = self.base_order.index(base.id)  # type: ignore[union-attr]
            self._append([line], head + body)
            _place_inline(self, manifest, base_tree, at + len(head), len(body))
            for n, (path, _size) in enumerate(inline):
                # Written without its digest: a later trial with the same content names this.
                self.aliases.setdefault(changed[path][2], f"{key}\0{n}")
            self.trials[key] = {"base": base.id if base_tree is not None else None, **manifest}  # type: ignore[union-attr]

    # -- reading -----------------------------------------------------------------------------

    def _blob_bytes(self, digest: str, depth: int = 0) -> bytes | None:
        blob = self.blobs.get(digest)
        if blob is None or depth > 64:
            return None
        try:
            with open(self.folder / PACK, "rb") as f:
                f.seek(blob.offset)
                packed = f.read(blob.length)
            if blob.codec is not None:
                whole = self._chunks.get(blob.offset)
                if whole is None:
                    whole = decompress(packed, blob.codec)
                    if sum(map(len, self._chunks.values())) > 64 << 20:
                        self._chunks.clear()
                    self._chunks[blob.offset] = whole
                start, size = blob.part  # type: ignore[misc]
                data = whole[start:start + size]
                return data if _digest(data) == digest else None
            if blob.part is not None:
                olds = [self._blob_bytes(d, depth + 1) for d in blob.refs]
                if any(r is None for r in olds):
                    return None
                dec = zlib.decompressobj(-15, zdict=b"".join(olds)[-ZDICT:] or b"\0")  # type: ignore[arg-type]
                start, size = blob.part
                data = (dec.decompress(packed) + dec.flush())[start:start + size]
                if "\0" in digest:  # read back from its record: its size is what can be checked
                    return data if len(data) == size else None
                return data if _digest(data) == digest else None
            if blob.delta is None:
                dec = zlib.decompressobj(-15)
            else:
                ref = self._blob_bytes(blob.delta, depth + 1)
                if ref is None:
                    return None
                dec = zlib.decompressobj(-15, zdict=ref[-ZDICT:])
            data = dec.decompress(packed) + dec.flush()
        except (OSError, zlib.error, lzma.LZMAError):
            return None
        return data if _digest(data) == digest else None

    def tree(self, key: str) -> Tree:
        """Trial ``key``'s whole workspace at its end. Raises ArchiveError when it was not
        archived or its base is missing."""
        line = self.trials.get(key)
        if line is None:
            raise ArchiveError("no workspace snapshot of this trial")
        if line.get("torn"):
            raise ArchiveError(f"the snapshot is torn: {line['torn']}")
        tree: Tree = {}
        if line.get("base") is not None:
            base = self.bases.get(line["base"])
            if base is None:
                raise ArchiveError(f"the snapshot's base {line['base']} is missing from the archive")
            tree.update(base)
        for p in line.get("removed") or ():
            tree.pop(p, None)
        tree.update({p: tuple(e) for p, e in (line.get("changed") or {}).items()})
        return tree

    def restore(self, key: str, dest: Path | str) -> list[str]:
        """Make ``dest`` hold trial ``key``'s workspace as it ended: files written, what it does
        not hold removed. Returns notes (files too large to have been kept). Raises ArchiveError
        naming the first file that cannot be given back (torn or missing)."""
        from ._fill import remove_tree

        tree = self.tree(key)
        dest = os.fspath(dest)
        # Every content first: a torn archive leaves the workspace as it was.
        contents: dict[str, bytes] = {}
        for path, entry in tree.items():
            if entry[0] == "f" and entry[2] not in contents:
                data = self._blob_bytes(entry[2])
                if data is None:
                    raise ArchiveError(f"the snapshot is torn: {path} cannot be read back from the archive")
                contents[entry[2]] = data
        notes: list[str] = []
        for rel, st, path in list(walk(dest)):
            want = tree.get(rel)
            kind = "d" if stat.S_ISDIR(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else "f"
            if want is None or want[0] != kind:
                if os.path.lexists(path):
                    if kind == "d":
                        remove_tree(Path(path))
                    else:
                        os.unlink(path)
        for path in sorted(tree, key=lambda p: p.count("/")):
            entry = tree[path]
            full = os.path.join(dest, path)
            if entry[0] == "d":
                os.makedirs(full, exist_ok=True)
                os.chmod(full, entry[1] | 0o700)
                continue
            os.makedirs(os.path.dirname(full) or dest, exist_ok=True)
            if entry[0] == "l":
                if os.path.lexists(full):
                    if os.path.islink(full) and os.readlink(full) == entry[1]:
                        continue
                    os.unlink(full)
                os.symlink(entry[1], full)
            elif entry[0] == "f":
                data = contents[entry[2]]
                if os.path.islink(full):
                    os.unlink(full)
                with open(full, "wb") as f:
                    f.write(data)
                os.chmod(full, entry[1])
            else:
                notes.append(f"{path} ({entry[1]} bytes) was too large to keep")
        return notes


_open: dict[str, Archive] = {}
_open_lock = threading.Lock()


def open_archive(folder: Path | str, *, create: bool = False) -> Archive:
    """The archive in ``folder`` (read once per process, then kept up to date in memory by its
    writers). ``create`` makes the folder, owner-only."""
    key = os.path.abspath(os.fspath(folder))
    with _open_lock:
        archive = _open.get(key)
        if archive is not None:
            return archive
        path = Path(key)
        if create:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(path, 0o700)
        elif not path.is_dir():
            raise ArchiveError(f"no workspace archive at {path}")
        archive = Archive(path)
        _load(archive)
        _open[key] = archive
        return archive


def read_archive(folder: Path | str) -> Archive:
    """An archive read afresh from disk (a reader in another process than its writer)."""
    archive = Archive(Path(folder))
    if not archive.folder.is_dir():
        raise ArchiveError(f"no workspace archive at {archive.folder}")
    _load(archive)
    return archive


def _load(archive: Archive) -> None:
    try:
        raw = (archive.folder / INDEX).read_bytes()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ArchiveError(f"cannot read {archive.folder / INDEX}: {exc.strerror or exc}") from None
    try:
        pack = open(archive.folder / PACK, "rb")
    except OSError:
        pack = None
    try:
        _load_lines(archive, raw, pack)
    finally:
        if pack is not None:
            pack.close()


def _load_lines(archive: Archive, raw: bytes, pack: Any) -> None:
    for n, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            for digest, where in (item.get("blobs") or {}).items():
                archive.blobs[digest] = _Blob(int(where[0]), int(where[1]), where[2] if len(where) > 2 else None)
            for at, length, codec, parts in item.get("solid") or ():
                start = 0
                for digest, size in parts:
                    archive.blobs[digest] = _Blob(int(at), int(length), None, (start, int(size)), codec=str(codec))
                    start += int(size)
            if "tree" in item:
                archive.bases[item["base"]] = {p: tuple(e) for p, e in item["tree"].items()}
                archive.base_order.append(item["base"])
            elif "t" in item:
                archive.trials[str(item["t"])] = _manifest(archive, item, pack)
        except (ValueError, KeyError, TypeError, AttributeError):
            archive.problems.append(f"{INDEX} line {n} is torn: skipped")


def trial_key(case_id: str, variant: str, trial: int) -> str:
    """The key a trial's snapshot is filed under: its label (case ids hold no space)."""
    return f"{case_id} {variant} #{int(trial)}"


def _place_inline(archive: Archive, manifest: dict[str, Any], base: Tree | None, at: int, length: int) -> None:
    """Where each inline content of a trial's record lies (its record's contents stream)."""
    inline = manifest.get("inline") or []
    refs = tuple(refs_of(inline, base))
    start = 0
    changed = manifest.get("changed") or {}
    for path, size in inline:
        digest = changed[path][2]
        archive.blobs.setdefault(digest, _Blob(at, length, None, (start, int(size)), refs))
        start += int(size)


def _manifest(archive: Archive, line: dict[str, Any], pack: Any) -> dict[str, Any]:
    """A trial from its index line, its manifest read from the pack (``torn`` when it cannot be)."""
    ordinal = line.get("b")
    base_id = archive.base_order[ordinal] if isinstance(ordinal, int) and 0 <= ordinal < len(archive.base_order) else None
    if ordinal is not None and base_id is None:
        return {"torn": f"its base (the {ordinal + 1}th of the archive) is missing"}
    base = archive.bases.get(base_id) if base_id is not None else None
    try:
        if pack is None:
            raise OSError("no pack")
        head, body = (int(n) for n in line["n"])
        pack.seek(int(line["at"]))
        packed = pack.read(head)
        if len(packed) != head:
            raise ValueError("the pack ends early")
        dec = zlib.decompressobj(-15, zdict=tree_dict(base))
        manifest = expand(json.loads(dec.decompress(packed) + dec.flush()), base, str(line["t"]))
    except (OSError, ValueError, TypeError, KeyError, zlib.error):
        return {"torn": "its manifest cannot be read back from the pack"}
    for digest, where in (manifest.get("blobs") or {}).items():
        archive.blobs[digest] = _Blob(int(where[0]), int(where[1]), where[2] if len(where) > 2 else None)
    try:
        _place_inline(archive, manifest, base, int(line["at"]) + head, body)
    except (KeyError, TypeError, ValueError, IndexError):
        return {"torn": "its manifest is not one anpord wrote"}
    return {"base": base_id, **manifest}


def take_base(folder: Path | str, root: Path | str) -> BaseRef:
    """Archive ``root`` (a workspace before its agent runs) into the archive at ``folder``."""
    return open_archive(folder, create=True).take_base(root)


def take_snapshot(folder: Path | str, key: str, root: Path | str, base: BaseRef | None = None) -> None:
    """Archive ``root`` (a workspace as its agent left it) as trial ``key``, relative to ``base``
    when the trial took one."""
    open_archive(folder, create=True).take(root, key, base)
