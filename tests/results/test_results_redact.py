"""Redaction of declared secrets and key-shaped strings: every spelling a secret takes on its way
to an output, in artifacts, reports and the console; and the modes of the files a run writes."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from results_factories import ANSI, TTYStringIO, feed, gate_failure, summary_for, trial
from secret_spellings import Secret, find_leaks

from anpord.events import Event
from anpord.results import ConsoleReporter, RunRecord, summary_json, write_junit
from anpord.results._redact import Redactor, _has_key_prefix, spellings
from anpord.results.artifacts import RunWriter

GITHUB = "ghp_" + "A" * 30
# The awkward kinds, each with a marker only it holds (see secret_spellings).
AWKWARD = [
    Secret("QUOTED", 'pa"ss\\word-Zq8Jx', "Zq8Jx", xml=False),
    Secret("NEWLINE", "trailing-Nl4Kp\n", "Nl4Kp", xml=False),
    Secret("ACCENTED", "clé-sécrète-Ac9Vm", "Ac9Vm", xml=False),
    Secret("URL", "a/b?c=d&e f=Ur7Wd%", "Ur7Wd", xml=False),
    Secret("QUOTES", 'don\'t say "Qp3Hs" \\', "Qp3Hs", xml=False),
    Secret("CONTROL", "tab\there\x01-Ct5Lb 😀", "Ct5Lb", xml=False),
    Secret("LEADING", '\\"lead-Ld2Rt', "Ld2Rt", xml=False),
]
VALUES = [s.value for s in AWKWARD]


@pytest.fixture(scope="module")
def redact() -> Redactor:
    return Redactor(VALUES)


def test_every_spelling_of_an_awkward_secret_is_redacted(redact: Redactor) -> None:
    """Raw, stripped, JSON-escaped up to four times (with and without \\uXXXX), repr (both
    quotings) and mixtures of them, URL-encoded: as the only text and inside other text."""
    for secret in AWKWARD:
        assert len(secret.spellings) > 3, secret.spellings
        for spelled in secret.spellings:
            for text in (spelled, f"before {spelled} after", f'{{"k": "{spelled}"}}'):
                out = redact(text)
                assert "[REDACTED]" in out, (secret.name, spelled, out)
                assert find_leaks({"out": out}, [secret]) == [], (spelled, out)


def _nest(value: object, layers: int, ascii_only: bool) -> str:
    for _ in range(layers):
        value = json.dumps({"v": value}, ensure_ascii=ascii_only)
    assert isinstance(value, str)
    return value


def _unnest(text: str, layers: int) -> object:
    value: object = text
    for _ in range(layers):
        assert isinstance(value, str)
        value = json.loads(value)["v"]
    return value


@pytest.mark.parametrize("layers", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("ascii_only", [True, False])
def test_redacted_json_stays_json_at_every_depth(
    redact: Redactor, layers: int, ascii_only: bool
) -> None:
    # Next to the secret: backslashes and quotes, which a careless match would eat half of. (A
    # backslash next to a secret that starts or ends with one may go with it: "\\\\" is also the
    # secret's backslash one layer deeper. The JSON stays whole.)
    for secret in AWKWARD:
        for around in ("", "\\", '"', "\\\\", "x"):
            out = redact(_nest(f"{around}{secret.value}{around}", layers, ascii_only))
            value = _unnest(out, layers)  # still JSON, all the way down
            assert isinstance(value, str) and value.count("[REDACTED]") == 1, (
                secret.name,
                around,
                out,
            )
            before, _, after = value.partition("[REDACTED]")
            assert set(before) <= set(around) and set(after) <= set(around + "\n"), (
                secret.name,
                around,
                value,
            )
            if "\\" not in around:
                assert before == around, (secret.name, around, value)
            assert find_leaks({"out": out}, [secret]) == []


def test_the_stripped_secret_is_redacted_and_surrounding_whitespace_stays() -> None:
    redact = Redactor(["tok-1234\n", "  spaced-5678  "])
    assert redact("a tok-1234 b") == "a [REDACTED] b"  # the agent stripped it
    assert redact("line tok-1234\nnext line") == "line [REDACTED]\nnext line"
    assert redact(json.dumps({"v": "tok-1234\n"})) == '{"v": "[REDACTED]\\n"}'
    assert redact("[spaced-5678]") == "[[REDACTED]]"


def test_short_and_blank_secrets_redact_nothing() -> None:
    declared = ["   ", "\n\n", "\t \n", "abc", " ab \n", ""]
    assert all(spellings(v) == [] for v in declared)
    text = 'abc about ab  \n\t "   " ' + json.dumps({"k": "abc\n"})
    assert Redactor(declared)(text) == text
    # A four-character secret is redacted, however much whitespace it was read with.
    assert Redactor(["\n abcd \n"])("x abcd y") == "x [REDACTED] y"


def test_the_longest_spelling_is_redacted_whole() -> None:
    redact = Redactor(["abcd1234", "abcd1234EXTRA", "abcd12"])
    assert redact("<abcd1234EXTRA> <abcd1234> <abcd12>") == "<[REDACTED]> <[REDACTED]> <[REDACTED]>"


def test_url_encoded_and_html_safe_json_spellings_are_redacted() -> None:
    value = "x&y<z>=1'2/3 ?Hs4"
    redact = Redactor([value])
    go_style = "".join(f"\\u{ord(c):04x}" if c in "&<>='" else c for c in value)  # Go, Gson
    slashed = value.replace("/", "\\/")  # PHP's json_encode
    for text in (quote(value), quote(value, safe=""), quote_plus(value), go_style, slashed):
        assert redact(f"?q={text}&n=1") == "?q=[REDACTED]&n=1", text


def test_a_long_multi_line_secret_and_many_secrets_build_and_redact() -> None:
    pem = (
        "-----BEGIN KEY-----\n"
        + "\n".join("Ab3+/" * 12 for _ in range(50))
        + "\n-----END KEY-----\n"
    )
    many = [f'secret-{i:03d}-"x\\y"-é' for i in range(50)]
    redact = Redactor([pem, *many])
    assert redact(f"key: {pem}!") == "key: [REDACTED]\n!"
    assert redact(json.dumps({"k": pem})) == '{"k": "[REDACTED]\\n"}'
    assert redact(repr(many[7]) + json.dumps(many[42])) == "'[REDACTED]'\"[REDACTED]\""


def test_text_without_a_secret_is_left_as_it_was(redact: Redactor) -> None:
    text = json.dumps({"reply": 'a "quoted" \\ word, clé, a/b?c=d, trailing', "n": [1, 2]})
    assert redact(text) == text


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
    assert Redactor(VALUES)(f"token {GITHUB} here") == "token [REDACTED] here"


def test_results_jsonl_trial_files_and_events_hold_no_secret(tmp_path: Path) -> None:
    quoted, accented = AWKWARD[0], AWKWARD[2]
    writer = RunWriter(tmp_path / "run", Redactor([quoted.value, accented.value]))
    both = f"{quoted.value} {accented.value}"
    r = trial(
        "c",
        "failed",
        error=f"ValueError: {both!r}",
        traceback=f"Traceback: ValueError: {both!r}",
        logs=[both, json.dumps({"nested": json.dumps(both)})],
        assertions=[
            gate_failure("equals", quoted.value, json.dumps([both]), f"saw {json.dumps(both)}")
        ],
    )
    writer.write_trial(r, [Event("tool.result", {"output": json.dumps({"token": both})})])
    writer.write_run(RunRecord(run_id="r", status="finished", started_at=0.0, note=both))
    writer.close()
    files = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert len(files) == 4  # run.json, results.jsonl, events.ndjson, the traceback file
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert "[REDACTED]" in text, path
        assert find_leaks({path.name: text}, [quoted, accented]) == []
        if path.suffix == ".json":
            json.loads(text)


def test_junit_and_json_reports_are_redacted(tmp_path: Path) -> None:
    quoted, accented = AWKWARD[0], AWKWARD[2]
    redact = Redactor([quoted.value, accented.value])
    rs = [
        trial(
            "c",
            "failed",
            reason=f"saw {quoted.value}",
            error=f"boom {accented.value!r} {GITHUB}",
            logs=[f"log {json.dumps(quoted.value)}"],
            assertions=[
                gate_failure("equals", "x", quoted.value, f"got {json.dumps(accented.value)}")
            ],
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
    xml_secrets = [Secret(s.name, s.value, s.marker) for s in (quoted, accented)]  # &quot; too
    for text in (seen, path.read_text(encoding="utf-8")):
        assert find_leaks({"junit": text}, xml_secrets) == [] and GITHUB not in text
    assert "saw [REDACTED]" in seen

    doc = summary_json(summary_for(rs), rs, redact=redact)
    assert find_leaks({"--json": doc}, [quoted, accented]) == [] and GITHUB not in doc
    assert json.loads(doc)["cells"][0]["results"][0]["reason"] == "saw [REDACTED]"


def _console_failure(secret: str) -> list:
    return [
        trial(
            "c",
            "failed",
            reason=f"saw {secret}",
            error=f"KeyError: {secret!r}",
            assertions=[
                gate_failure(
                    "equals", secret, {"reply": json.dumps(secret)}, f"rejected {secret!r}"
                )
            ],
        )
    ]


@pytest.mark.parametrize("verbose", [False, True])
def test_the_console_writes_no_secret(verbose: bool) -> None:
    out = TTYStringIO()  # a terminal: colours and the live region
    reporter = ConsoleReporter(out, verbose=verbose, redact=Redactor(VALUES))
    for secret in AWKWARD:
        rs = _console_failure(secret.value)
        # A multi-line log message holding the secret: redacted whole before it is split.
        feed(reporter, rs, logs={"c": [f"printed {secret.value}\nthen {json.dumps(secret.value)}"]})
    text = out.getvalue()
    assert find_leaks({"console": text}, AWKWARD) == []
    plain = ANSI.sub("", text)
    assert "expected: '[REDACTED]'" in plain and "rejected '[REDACTED]'" in plain, plain
    assert "error: KeyError: '[REDACTED]'" in plain
    if verbose:
        assert "c | printed [REDACTED]\n" in plain and 'c | then "[REDACTED]"\n' in plain, plain


def test_a_secret_cut_to_the_terminal_width_is_redacted_before_the_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    value = "x" * 20 + "-Cw7Tq-" + "y" * 40
    secret = Secret("LONG", value, "Cw7Tq", xml=False)
    reporter = ConsoleReporter(TTYStringIO(), redact=Redactor([value]))
    # A void reason in the live region's width: a cut secret would leave its first 30 characters.
    line = reporter._render([(f"void: {value}", "")], width=30)
    assert (
        "[REDACTED]" in line and "xxxx" not in line and find_leaks({"line": line}, [secret]) == []
    )
    # Without a redactor, the console is unchanged.
    assert value[:20] in ConsoleReporter(TTYStringIO())._render([(f"void: {value}", "")], width=30)


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


# -- secrets that look like JSON, cut secrets, multi-line secrets --------------------------------


@pytest.mark.parametrize("secret", ["1796", "true", "null", "1796,1"])
def test_a_secret_that_is_also_json_syntax_leaves_every_record_json(tmp_path: Path, secret: str) -> None:
    writer = RunWriter(tmp_path / "run", Redactor([secret]))
    r = trial("c", "failed", reason=f"saw {secret}", logs=[f"took {secret} ms"],
              assertions=[gate_failure("equals", 1796, [1796, True, None, 1], f"got {secret}")])
    writer.write_trial(r, [Event("tool.called", {"input": {"pin": 1796, "ok": True, "x": None}})])
    writer.write_run(RunRecord(run_id="r", status="finished", started_at=1796.0, note=f"n {secret}"))
    writer.close()
    line = json.loads((tmp_path / "run" / "results.jsonl").read_text())
    assert line["reason"] == "saw [REDACTED]" and line["logs"] == ["took [REDACTED] ms"]
    assert line["assertions"][0]["actual"] == [1796, True, None, 1]  # values, not text: kept
    event = json.loads((tmp_path / "run" / "events.ndjson").read_text())
    assert event["input"] == {"pin": 1796, "ok": True, "x": None}
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["note"] == "n [REDACTED]" and record["started_at"] == 1796.0


def test_what_a_cut_leaves_of_a_secret_is_redacted_from_16_characters() -> None:
    value = 'pa"ss\\word-' + "Zq8Jx" * 12
    redact = Redactor([value])
    for kept in (16, 17, 40, len(value) - 1):
        head, tail = value[:kept], value[-kept:]
        for text in (f"saw {head}… (+9 chars)", f"saw …{tail} end", f"saw {json.dumps(head)}…",
                     json.dumps({"m": f"saw {json.dumps(head)}…"})):
            out = redact(text)
            assert "[REDACTED]" in out and "Zq8Jx" not in out, (kept, text, out)
    assert redact(value[:15]) == value[:15]  # shorter than 16: not recognised


def test_each_line_of_a_multi_line_secret_is_redacted() -> None:
    key = "-----BEGIN KEY-----\nMIIEv-Ab3Kd-line-one\nMIIEv-Ab3Kd-line-two\nab\n-----END KEY-----\n"
    redact = Redactor([key])
    assert [redact(line) for line in key.splitlines()] == ["[REDACTED]"] * 3 + ["ab", "[REDACTED]"]
    assert redact(key) == "[REDACTED]\n"


def test_a_key_prefix_is_found_wherever_it_is_however_often_its_anchor_byte_comes() -> None:
    """The prefix search looks where one byte of the prefix is (``-`` of ``sk-``), a few places,
    then searches plainly: found exactly when the prefix is there, near the start, past many
    anchors, or not at all."""
    import random

    from anpord.results._redact import _at, _has_key_prefix_bytes

    rng = random.Random(7)
    for _ in range(20_000):
        data = bytes(rng.choice(b"sk-xo_A") for _ in range(rng.randint(0, 40)))
        for needle, anchor in ((b"sk-", 2), (b"xox", 0)):
            for tries in (1, 3, 32):
                assert _at(data, needle, anchor, tries) == (needle in data), (data, needle, tries)
    many = b"a-" * 100  # more anchors than tries: the plain search decides
    assert _has_key_prefix_bytes(many + b"sk-") and not _has_key_prefix_bytes(many + b"sk")
    assert _has_key_prefix_bytes(b"sk-") and _has_key_prefix_bytes(b'{"k":"xoxb-1"}')
