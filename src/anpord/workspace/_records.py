"""How a workspace archive writes its records compactly (see ``_archive``): the codecs, and a
trial's manifest as written — every byte saved here is saved once a trial."""

from __future__ import annotations

import json
import lzma
import zlib
from collections.abc import Mapping
from typing import Any

__all__ = ["compact", "compress", "decompress", "expand", "refs_of", "tree_dict", "to_json"]

# zlib's preset dictionary holds at most its window.
ZDICT = 32 << 10
_XZ_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 6}]

Entry = tuple[Any, ...]
Tree = dict[str, Entry]


def compress(raw: bytes, codec: str) -> bytes:
    if codec == "xz":
        return lzma.compress(raw, format=lzma.FORMAT_RAW, filters=_XZ_FILTERS)
    comp = zlib.compressobj(6, zlib.DEFLATED, -15)
    return comp.compress(raw) + comp.flush()


def decompress(packed: bytes, codec: str) -> bytes:
    if codec == "xz":
        return lzma.decompress(packed, format=lzma.FORMAT_RAW, filters=_XZ_FILTERS)
    dec = zlib.decompressobj(-15)
    return dec.decompress(packed) + dec.flush()


def to_json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def tree_dict(tree: Tree | None) -> bytes:
    """The preset dictionary a trial's manifest is deflated with: its base's tree."""
    return to_json(tree)[-ZDICT:] if tree else b"{}"


def compact(manifest: dict[str, Any], base: Tree | None, aliases: Mapping[str, str]) -> dict[str, Any]:
    """A manifest as written: a file is ``[size]`` when its content is inline (its digest is not
    written: the content is in the record itself), else ``[digest]``, its mode added only when
    it is not the base's (or 0o644 for a new file); links, folders and left-out files keep their
    tagged entries. Every byte saved here is saved a thousand times."""
    sizes = {p: n for p, n in manifest.get("inline") or ()}
    changed: dict[str, list[Any]] = {}
    for path, entry in (manifest.get("changed") or {}).items():
        if entry[0] == "f":
            out: list[Any] = [sizes[path]] if path in sizes else [aliases.get(entry[2], entry[2])]
            old = base.get(path) if base is not None else None
            if entry[1] != (old[1] if old is not None and old[0] == "f" else 0o644):
                out.append(entry[1])
            changed[path] = out
        else:
            changed[path] = list(entry)
    written: dict[str, Any] = {"c": changed}
    if manifest.get("removed"):
        written["r"] = manifest["removed"]
    if manifest.get("blobs"):
        written["k"] = manifest["blobs"]
    return written


def expand(written: Any, base: Tree | None, key: str) -> dict[str, Any]:
    """The manifest ``compact`` wrote. An inline content gets a name of its own in place of its
    digest (``KEY\\0N``): it is read back from this record only."""
    if not isinstance(written, dict) or not isinstance(written.get("c"), dict):
        raise ValueError("not a manifest")
    changed: dict[str, Entry] = {}
    inline: list[list[Any]] = []
    for path, entry in written["c"].items():
        if entry and entry[0] in ("l", "d", "x"):
            changed[path] = tuple(entry)
            continue
        old = base.get(path) if base is not None else None
        mode = entry[1] if len(entry) > 1 else (old[1] if old is not None and old[0] == "f" else 0o644)
        if isinstance(entry[0], int):
            changed[path] = ("f", int(mode), f"{key}\0{len(inline)}")
            inline.append([path, entry[0]])
        else:
            changed[path] = ("f", int(mode), str(entry[0]))
    manifest: dict[str, Any] = {"changed": changed}
    if written.get("r"):
        manifest["removed"] = list(written["r"])
    if inline:
        manifest["inline"] = inline
    if written.get("k"):
        manifest["blobs"] = dict(written["k"])
    return manifest


def refs_of(inline: list[list[Any]], base: Tree | None) -> list[str]:
    """The contents a trial's inline contents were deflated against: what their paths held in
    the base."""
    if base is None:
        return []
    found = [base[p][2] for p, _size in inline if p in base and base[p][0] == "f"]
    return list(dict.fromkeys(found))
