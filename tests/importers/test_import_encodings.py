"""A case file saved on Windows (CRLF line endings, a byte-order mark, UTF-16) imports exactly as
its LF, UTF-8 twin does: the same suite, no stray carriage return in a literal or a comment."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest
from importers_support import FIXTURES, load

from anpord.importers import CaseFileNotJson, CaseFileNotYaml, ImportRefusal, import_cases

CASE_FILES = sorted(
    p for p in FIXTURES.rglob("*") if p.suffix.lower() in (".json", ".yaml", ".yml")
)


def format_of(path: Path) -> str:
    return "evals-json" if path.suffix == ".json" else "yaml"


def result(fmt: str, path: Path) -> tuple[str, object]:
    """The import's outcome with the file's own path blanked, so twins compare equal."""
    try:
        suite = import_cases(fmt, str(path))
    except ImportRefusal as refusal:
        return type(refusal).__name__, refusal.message.replace(str(path), "PATH")
    return "imported", (
        suite.source.replace(str(path), "PATH"),
        tuple(note.replace(str(path), "PATH") for note in suite.notes),
        suite.tally,
    )


VARIANTS = {
    "crlf": lambda lf: lf.replace(b"\n", b"\r\n"),
    "cr": lambda lf: lf.replace(b"\n", b"\r"),
    "bom-crlf": lambda lf: codecs.BOM_UTF8 + lf.replace(b"\n", b"\r\n"),
    "utf-16": lambda lf: lf.decode("utf-8").encode("utf-16"),
    "utf-16-be": lambda lf: codecs.BOM_UTF16_BE + lf.decode("utf-8").encode("utf-16-be"),
    "utf-32": lambda lf: lf.decode("utf-8").encode("utf-32"),
}


# A lone CR ends a line in YAML; JSON knows only CRLF and LF.
COPIES = [
    pytest.param(path, variant, id=f"{path.relative_to(FIXTURES)}-{variant}")
    for path in CASE_FILES
    for variant in VARIANTS
    if not (variant == "cr" and format_of(path) == "evals-json")
]


@pytest.mark.parametrize(("path", "variant"), COPIES)
def test_a_windows_copy_imports_as_the_original(tmp_path: Path, path: Path, variant: str) -> None:
    lf = path.read_bytes().replace(b"\r\n", b"\n")
    fmt = format_of(path)
    original, copy = tmp_path / f"lf{path.suffix}", tmp_path / f"{variant}{path.suffix}"
    original.write_bytes(lf)
    copy.write_bytes(VARIANTS[variant](lf))
    kind, outcome = result(fmt, copy)
    want_kind, want = result(fmt, original)
    assert kind == want_kind
    if kind == "CaseFileNotJson":  # the parser's message counts characters, CRs included
        assert str(outcome).split(" (char")[0] == str(want).split(" (char")[0]
    else:
        assert outcome == want
    if kind == "imported":
        source = outcome[0]  # type: ignore[index]
        assert "\\r" not in source and "\r" not in source
        load(source.replace("PATH", "p"))


def test_a_mark_with_a_broken_body_is_named_by_its_encoding(tmp_path: Path) -> None:
    path = tmp_path / "evals.json"
    path.write_bytes(codecs.BOM_UTF16_LE + b"{\x00\x00\xd8")  # a lone surrogate
    with pytest.raises(CaseFileNotJson) as caught:
        import_cases("evals-json", str(path))
    assert caught.value.message == f"{path} is not JSON: not UTF-16 text (invalid byte at offset 4)"


def test_text_in_no_announced_encoding_is_still_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "case.yaml"
    path.write_bytes(b"name: caf\xe9\ntask: t\n")  # Latin-1
    with pytest.raises(CaseFileNotYaml) as caught:
        import_cases("yaml", str(path))
    assert caught.value.message == f"{path} is not YAML: not UTF-8 text (invalid byte at offset 9)"
