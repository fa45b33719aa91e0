"""Redaction of declared secrets and key-shaped strings, in artifacts and in the reports, and
the modes of the files a run writes."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

from results_factories import gate_failure, summary_for, trial

from anpord.events import Event
from anpord.results import summary_json, write_junit
from anpord.results._redact import Redactor, _has_key_prefix
from anpord.results import RunRecord
from anpord.results.artifacts import RunWriter

QUOTED = 'pa"ss\\word42'
ACCENTED = "clé-sécrète-42"
GITHUB = "ghp_" + "A" * 30


def leaked(text: str, value: str) -> bool:
    return any(
        spelled in text
        for spelled in (value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1])
    )


def test_a_secret_is_redacted_in_plain_and_in_json_text() -> None:
    redact = Redactor([QUOTED, ACCENTED])
    for value in (QUOTED, ACCENTED):
        for text in (
            f"saw {value}",
            json.dumps({"saw": value}),
            json.dumps({"saw": value}, ensure_ascii=False),
        ):
            out = redact(text)
            assert not leaked(out, value) and "[REDACTED]" in out, (text, out)
    # Redacting JSON text keeps it JSON.
    assert json.loads(redact(json.dumps({"saw": f"<{QUOTED}>"}))) == {"saw": "<[REDACTED]>"}


def test_key_prefixes_are_exact() -> None:
    assert not _has_key_prefix("the weather in Brighton is high, light rain")  # "gh" is not one
    for key in (
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "sk-",
        "AKIA",
        "xoxb",
        "AIza",
    ):
        assert _has_key_prefix(f"token {key}x"), key
    assert Redactor()(f"token {GITHUB} here") == "token [REDACTED] here"


def test_results_jsonl_trial_files_and_events_hold_no_escaped_secret(tmp_path: Path) -> None:
    writer = RunWriter(tmp_path / "run", Redactor([QUOTED, ACCENTED]))
    r = trial("c", "failed", error=f"ValueError: {QUOTED} {ACCENTED}", logs=[QUOTED, ACCENTED],
              traceback=f"Traceback: ValueError: {QUOTED} {ACCENTED}")
    writer.write_trial(r, [Event("log", {"message": f"{QUOTED} {ACCENTED}"})])
    writer.write_run(RunRecord(run_id="r", status="finished", started_at=0.0, note=QUOTED))
    writer.close()
    files = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert len(files) == 4  # run.json, results.jsonl, events.ndjson, the traceback file
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert "[REDACTED]" in text, path
        assert not leaked(text, QUOTED) and not leaked(text, ACCENTED), path
        if path.suffix == ".json":
            json.loads(text)


def test_junit_and_json_reports_are_redacted(tmp_path: Path) -> None:
    redact = Redactor([QUOTED, ACCENTED])
    rs = [
        trial(
            "c",
            "failed",
            reason=f"saw {QUOTED}",
            error=f"boom {ACCENTED} {GITHUB}",
            logs=[f"log {QUOTED}"],
            assertions=[gate_failure("equals", "x", QUOTED, f"got {ACCENTED}")],
        )
    ]
    path = tmp_path / "junit.xml"
    write_junit(path, summary_for(rs), rs, redact=redact)
    root = ET.parse(path).getroot()
    seen = "\n".join(
        [
            *(el.text or "" for el in root.iter()),
            *(v for el in root.iter() for v in el.attrib.values()),
        ]
    )
    for text in (seen, path.read_text(encoding="utf-8")):
        assert not leaked(text, QUOTED) and not leaked(text, ACCENTED) and GITHUB not in text
    assert "saw [REDACTED]" in seen

    doc = summary_json(summary_for(rs), rs, redact=redact)
    assert not leaked(doc, QUOTED) and not leaked(doc, ACCENTED) and GITHUB not in doc
    assert json.loads(doc)["cells"][0]["results"][0]["reason"] == "saw [REDACTED]"


def test_reports_and_artifacts_get_an_ordinary_file_mode(tmp_path: Path) -> None:
    umask = os.umask(0o027)
    try:
        rs = [trial("c")]
        write_junit(tmp_path / "junit.xml", summary_for(rs), rs)
        writer = RunWriter(tmp_path / "run")
        writer.write_trial(rs[0], [])
        writer.write_run(RunRecord(run_id="r", status="finished", started_at=0.0))
        writer.close()
    finally:
        os.umask(umask)
    modes = {
        p.name: p.stat().st_mode & 0o777
        for p in [tmp_path / "junit.xml", *(tmp_path / "run").rglob("*")]
        if p.is_file()
    }
    assert set(modes) == {"junit.xml", "run.json", "results.jsonl", "events.ndjson"}
    assert set(modes.values()) == {0o640}, modes
    assert not [p for p in tmp_path.rglob("*.tmp")]
