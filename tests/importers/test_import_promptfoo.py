"""--format promptfoo: prompts × tests, vars rendered, defaultTest merged, assertions converted
exactly or quoted in a placeholder, providers as variants, and one-line refusals."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from importers_support import load, verdict

from anpord.importers import (
    CaseFileEmpty,
    CaseFileIsLfsPointer,
    CaseFileNotPromptfoo,
    CaseFileNotYaml,
    CaseFileUnreadable,
    ImportRefusal,
    import_cases,
)


def _suite(tmp_path: Path, text: str, **files: str) -> tuple[Any, dict[str, Any]]:
    for name, body in files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(text, encoding="utf-8")
    suite = import_cases("promptfoo", str(tmp_path))
    return suite, load(suite.source)


def _cases(namespace: dict[str, Any]) -> dict[str, Any]:
    return {case.id: case for case in namespace["_cases"]}


def test_prompts_times_tests_with_vars_rendered(tmp_path: Path) -> None:
    suite, ns = _suite(
        tmp_path,
        """\
prompts:
  - "Translate to {{ language | lower }}: {{ input }}"
  - file://prompt.txt
tests:
  - description: French
    vars: {language: FRENCH, input: Hello}
  - vars: {language: German, input: Bye}
""",
        **{
            "prompt.txt": "Q: {{ input | upper }}\n---\n{% for w in ['a','b'] %}{{ w }}{% endfor %} {{ input }}\n"
        },
    )
    cases = _cases(ns)
    # Two prompts in the list, the file one split on --- into two: three prompts × two tests.
    assert suite.tally.cases == 6
    assert cases["french-prompt-1"].prompt == "Translate to french: Hello"
    assert cases["french-prompt-2"].prompt == "Q: HELLO"
    assert cases["french-prompt-3"].prompt == "ab Hello"
    assert cases["test-2-prompt-1"].prompt == "Translate to german: Bye"
    assert cases["french-prompt-1"].name == "French"


def test_default_test_merges_as_promptfoo_merges(tmp_path: Path) -> None:
    _, ns = _suite(
        tmp_path,
        """\
prompts: ["{{ greeting }}, {{ name }}"]
defaultTest:
  vars: {greeting: Hi, name: nobody}
  assert:
    - type: not-icontains
      value: sorry
tests:
  - vars: {name: Ada}
    assert:
      - type: contains
        value: Ada
""",
    )
    (case,) = ns["_cases"]
    assert case.prompt == "Hi, Ada"  # the test's var wins, the default's fills the rest
    assert verdict(case, "Hello Ada")[0] is True
    assert verdict(case, "Sorry Ada")[0] is False  # the default's assertion comes first, and holds
    assert verdict(case, "Hello ada")[0] is False  # contains is case-sensitive


MECHANICAL = [
    ("equals", "Paris", "Paris", "paris"),
    ("not-equals", "Paris", "Lyon", "Paris"),
    ("contains", "Paris", "in Paris.", "in paris."),
    ("icontains", "Paris", "in PARIS.", "in Lyon"),
    ("not-contains", "Lyon", "Paris", "Lyon"),
    ("contains-any", "Paris, Lyon", "Lyon!", "Nice"),
    ("contains-all", ["Paris", "Lyon"], "Paris and Lyon", "Paris"),
    ("icontains-all", ["paris", "lyon"], "PARIS LYON", "PARIS"),
    ("not-icontains-any", ["sorry", "cannot"], "Sure", "I CANNOT"),
    ("starts-with", "Yes", "Yes, Paris", "No, yes"),
    ("regex", "^\\d{3}$", "123", "12a"),
    ("not-regex", "error", "fine", "an error"),
]


@pytest.mark.parametrize(("kind", "value", "good", "bad"), MECHANICAL)
def test_mechanical_assertions_convert_exactly(
    tmp_path: Path, kind: str, value: Any, good: str, bad: str
) -> None:
    import json

    suite, ns = _suite(
        tmp_path,
        f"prompts: [hi]\ntests:\n  - assert:\n      - type: {kind}\n        value: {json.dumps(value)}\n",
    )
    assert suite.tally.needs_author == 0
    (case,) = ns["_cases"]
    assert verdict(case, good)[0] is True
    assert verdict(case, bad)[0] is False


def test_json_levenshtein_and_similar(tmp_path: Path) -> None:
    _, ns = _suite(
        tmp_path,
        """\
prompts: [hi]
tests:
  - description: json
    assert: [{type: is-json}]
  - description: contains json
    assert: [{type: contains-json}]
  - description: equal object
    assert: [{type: equals, value: {a: 1}}]
  - description: close
    assert: [{type: levenshtein, value: kitten, threshold: 3}]
  - description: similar
    assert: [{type: similar, value: "hello world", threshold: 0.8}]
""",
    )
    cases = _cases(ns)
    assert verdict(cases["json"], '{"a": 1}')[0] and not verdict(cases["json"], "{a")[0]
    assert verdict(cases["contains-json"], 'Here: ```{"a": [1]}```')[0]
    assert not verdict(cases["contains-json"], "no json")[0]
    assert verdict(cases["equal-object"], '{ "a" : 1 }')[0]
    assert not verdict(cases["equal-object"], '{"a": 2}')[0]
    assert verdict(cases["close"], "sitting")[0] and not verdict(cases["close"], "dog")[0]
    assert verdict(cases["similar"], "hello world!")[0] and not verdict(cases["similar"], "bye")[0]


def test_model_graded_become_judges_with_the_text_verbatim(tmp_path: Path) -> None:
    suite, ns = _suite(
        tmp_path,
        """\
prompts: [hi]
defaultTest:
  options:
    provider: openai:chat:gpt-4.1-mini
tests:
  - vars: {topic: rain}
    assert:
      - type: llm-rubric
        value: "Mentions {{ topic }} and stays under 50 words"
        threshold: 0.5
        metric: brevity
      - type: model-graded-closedqa
        value: Says it will rain
        provider: anthropic:messages:claude
      - type: factuality
        value: Kyoto is in Japan
      - type: g-eval
        value: [Coherent, Concise]
""",
    )
    assert suite.tally.converted == 4 and suite.tally.needs_author == 0
    (case,) = ns["_cases"]
    judges = {spec.name: spec for spec in case.judges}
    assert judges["brevity"].rubric == "Mentions rain and stays under 50 words"
    assert judges["brevity"].threshold == 0.5
    assert judges["brevity"].model == "gpt-4.1-mini"  # the grader the file named
    assert judges["model-graded-closedqa"].rubric == "Says it will rain"
    assert judges["model-graded-closedqa"].model is None  # not an OpenAI model id
    assert "anthropic:messages:claude" in suite.source  # said in a comment instead
    assert judges["factuality"].rubric.endswith("Kyoto is in Japan")
    assert judges["g-eval"].rubric == "Coherent\nConcise"


def test_code_and_unknown_types_are_placeholders_quoting_them(tmp_path: Path) -> None:
    suite, ns = _suite(
        tmp_path,
        """\
prompts: [hi]
tests:
  - assert:
      - type: javascript
        value: "output.length < 10 && !output.includes('\\"')"
      - type: python
        value: file://check.py
      - type: context-faithfulness
        threshold: 0.7
      - type: icontains
        value: ok
        transform: output.toUpperCase()
""",
    )
    assert suite.tally.needs_author == 4
    assert "output.length < 10 && !output.includes" in suite.source
    assert "anpord has no context-faithfulness" in suite.source
    assert "after the file's transform" in suite.source
    (case,) = ns["_cases"]
    assert verdict(case, "ok")[0] is False  # a placeholder never passes


def test_threshold_weight_metric_are_kept_as_comments(tmp_path: Path) -> None:
    suite, _ = _suite(
        tmp_path,
        "prompts: [hi]\ntests:\n  - assert:\n      - {type: contains, value: x, weight: 3, "
        "metric: mentions-x, threshold: 0.4}\n",
    )
    assert "# weight 3 in the file; anpord does not weigh checks" in suite.source
    assert '# metric: "mentions-x"' in suite.source
    assert "# threshold 0.4 in the file; this check has no score" in suite.source


def test_latency_and_cost_read_the_run(tmp_path: Path) -> None:
    from anpord.events import Event

    _, ns = _suite(
        tmp_path,
        "prompts: [hi]\ntests:\n  - assert:\n      - {type: latency, threshold: 1000}\n"
        "      - {type: cost, threshold: 0.5}\n",
    )
    (case,) = ns["_cases"]

    class Context:
        def __init__(self, seconds: float, cost: float) -> None:
            self.events = [
                Event("turn.started", {}, ts=100.0),
                Event("usage", {"cost": cost}, ts=100.0 + seconds),
            ]

        async def answer(self) -> str:
            return "fine"

    assert asyncio.run(case.validate(Context(0.5, 0.1)))[0] is True
    assert asyncio.run(case.validate(Context(2.0, 0.1)))[0] is False
    assert asyncio.run(case.validate(Context(0.5, 0.9)))[0] is False


def test_csv_tests_with_expected_columns(tmp_path: Path) -> None:
    suite, ns = _suite(
        tmp_path,
        "prompts: ['Say {{ word }}']\ntests: file://tests.csv\n",
        **{
            "tests.csv": "\ufeffword,__expected1,__expected2,__description\n"
            '"multi\nline",icontains:line,"grade:Says {{ word }}",first\n'
            "plain,exact text,,second\n"
        },
    )
    cases = _cases(ns)
    assert cases["first"].prompt == "Say multi\nline"
    assert verdict(cases["first"], "LINE")[0] is True
    assert cases["first"].judges[0].rubric == "Says multi\nline"
    assert verdict(cases["second"], "exact text")[0] is True  # plain text is equals
    assert verdict(cases["second"], "exact text!")[0] is False
    assert suite.tally.needs_author == 0


def test_file_vars_chat_prompts_and_prompt_functions(tmp_path: Path) -> None:
    suite, ns = _suite(
        tmp_path,
        """\
prompts:
  - file://chat.json
  - file://build.py:make
tests:
  - vars: {article: file://article.txt}
""",
        **{
            "chat.json": '[{"role": "system", "content": "Be terse."}, '
            '{"role": "user", "content": "Sum up: {{ article }}"}]',
            "article.txt": "Rain in Kyoto.",
        },
    )
    cases = _cases(ns)
    assert cases["test-1-prompt-1"].prompt == "system: Be terse.\n\nuser: Sum up: Rain in Kyoto."
    assert cases["test-1-prompt-2"].prompt == "file://build.py:make"
    assert "the prompt is built by code in build.py:make" in suite.source


def test_array_vars_expand_and_scenarios_cross(tmp_path: Path) -> None:
    suite, ns = _suite(
        tmp_path,
        """\
prompts: ["{{ a }}-{{ b }}"]
tests:
  - vars: {a: [1, 2], b: [x, y]}
scenarios:
  - config: [{vars: {b: s1}}, {vars: {b: s2}}]
    tests:
      - vars: {a: t1}
      - vars: {a: t2}
""",
    )
    prompts = sorted(case.prompt for case in ns["_cases"])
    assert prompts == ["1-x", "1-y", "2-x", "2-y", "t1-s1", "t1-s2", "t2-s1", "t2-s2"]
    assert suite.tally.cases == 8


def test_ref_templates_and_asserts_typo(tmp_path: Path) -> None:
    suite, ns = _suite(
        tmp_path,
        """\
prompts: [hi]
assertionTemplates:
  pirate: {type: icontains, value: arrr}
tests:
  - assert:
      - $ref: '#/assertionTemplates/pirate'
  - asserts:
      - {type: icontains, value: lost}
""",
    )
    first, second = ns["_cases"]
    assert verdict(first, "ARRR")[0] is True
    assert verdict(second, "lost")[0] is False  # no assertion was read: a placeholder
    assert any("did you mean assert?" in note for note in suite.notes)


def test_template_that_fails_keeps_the_raw_prompt(tmp_path: Path) -> None:
    suite, ns = _suite(
        tmp_path,
        "prompts: ['{{ name | nosuchfilter }}', '{% for %}']\ntests:\n  - vars: {name: a}\n",
    )
    assert [case.prompt for case in ns["_cases"]] == ["{{ name | nosuchfilter }}", "{% for %}"]
    assert (
        "The prompt did not render (TemplateAssertionError: No filter named 'nosuchfilter'"
        in suite.source
    )


def test_sandboxed_templates_cannot_reach_python(tmp_path: Path) -> None:
    suite, ns = _suite(
        tmp_path, "prompts: ['{{ x.__class__.__mro__ }}']\ntests:\n  - vars: {x: a}\n"
    )
    (case,) = ns["_cases"]
    assert "object" not in case.prompt


def test_providers_become_variants(tmp_path: Path) -> None:
    _, ns = _suite(
        tmp_path,
        """\
prompts: [hi]
providers:
  - openai:gpt-4o-mini
  - id: openai:chat:llama3
    label: local
    config: {apiBaseUrl: "http://localhost:8080/v1", temperature: 0}
  - ollama:chat:qwen2
  - anthropic:messages:claude-3
  - exec: python agent.py
""",
    )
    variants = {v.name: v for v in ns["suite"].variants}
    assert variants["openai:gpt-4o-mini"].harness == "openai:gpt-4o-mini"
    assert variants["local"].options == {"base_url": "http://localhost:8080/v1", "temperature": 0}
    assert variants["ollama:chat:qwen2"].options["base_url"] == "http://localhost:11434/v1"
    assert "anthropic:messages:claude-3" not in variants  # a commented placeholder, not a variant
    assert len(variants) == 3


def test_no_openai_provider_keeps_the_default_variant(tmp_path: Path) -> None:
    suite, ns = _suite(tmp_path, "prompts: [hi]\nproviders: [echo]\n")
    assert [v.harness for v in ns["suite"].variants] == [ns["_HARNESS"]]
    assert '# Variant(harness=_HARNESS, name="echo"),' in suite.source


REFUSALS = [
    ("prompts: [hi\n", CaseFileNotYaml),
    ("- a\n- b\n", CaseFileNotPromptfoo),
    ("name: x\ntask: y\n", CaseFileNotPromptfoo),
    ("prompts: 12\n", CaseFileNotPromptfoo),
    ("prompts: [hi]\ntests: [12]\n", CaseFileNotPromptfoo),
    ("prompts: [hi]\ntests: file://gone.csv\n", CaseFileUnreadable),
    ("prompts: [hi]\ntests: file://gen.py:tests\n", CaseFileNotPromptfoo),
    ("", CaseFileEmpty),
    (
        "version https://git-lfs.github.com/spec/v1\noid sha256:ab12\nsize 10\n",
        CaseFileIsLfsPointer,
    ),
]


@pytest.mark.parametrize(("text", "refusal"), REFUSALS)
def test_refusals_are_one_line(tmp_path: Path, text: str, refusal: type[ImportRefusal]) -> None:
    (tmp_path / "promptfooconfig.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(refusal) as caught:
        import_cases("promptfoo", str(tmp_path / "promptfooconfig.yaml"))
    assert "\n" not in caught.value.line()


def test_refusal_names_the_field(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("prompts: [hi]\ntests:\n  - {vars: {a: 1}}\n  - 7\n")
    with pytest.raises(CaseFileNotPromptfoo, match=r"tests\[1\]: Expected a test mapping"):
        import_cases("promptfoo", str(tmp_path / "c.yaml"))


def test_folder_without_config_and_missing_path(tmp_path: Path) -> None:
    with pytest.raises(CaseFileNotPromptfoo, match="holds no promptfooconfig.yaml"):
        import_cases("promptfoo", str(tmp_path))
    with pytest.raises(CaseFileUnreadable):
        import_cases("promptfoo", str(tmp_path / "nope.yaml"))


def test_a_python_assert_in_a_file_is_quoted_with_its_code(tmp_path: Path) -> None:
    suite, ns = _suite(
        tmp_path,
        "prompts: [hi]\ntests:\n  - assert:\n      - {type: python, value: 'file://check.py:grade'}\n",
        **{"check.py": "def grade(output, context):\n    return 'rain' in output\n"},
    )
    assert "#     return 'rain' in output" in suite.source
    (case,) = ns["_cases"]
    assert verdict(case, "rain")[0] is False  # quoted, never run


def test_cli_flags_of_dataset_belong_to_dataset(tmp_path: Path) -> None:
    from importers_support import run_anpord

    (tmp_path / "promptfooconfig.yaml").write_text("prompts: [hi]\n")
    done = run_anpord(
        "eval", "import", "--format", "promptfoo", ".", "--match", "equals", cwd=tmp_path
    )
    assert done.returncode == 2
    assert done.stderr == "anpord eval import: error: --match applies only to --format dataset\n"
    done = run_anpord("eval", "import", "--format", "promptfoo", ".", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Imported by `anpord eval import`")
    assert done.stderr.splitlines()[-1].startswith(
        "Read 1 case, converted 0 assertions. 1 assertion"
    )


def test_tests_from_a_folder(tmp_path: Path) -> None:
    suite, ns = _suite(
        tmp_path,
        "prompts: ['{{ q }}']\ntests: file://cases/\n",
        **{
            "cases/a.yaml": "- vars: {q: one}\n",
            "cases/b.csv": "q,__expected\ntwo,contains:2\n",
            "cases/notes.md": "not a test file",
        },
    )
    assert [case.prompt for case in ns["_cases"]] == ["one", "two"]


def test_a_template_cannot_blow_up(tmp_path: Path) -> None:
    suite, ns = _suite(
        tmp_path,
        "prompts: ['{{ \"a\" * 10**9 }}', '{{ 2 ** 100000000 }}', '{{ \"ab\" * 3 }}']\n",
    )
    prompts = [case.prompt for case in ns["_cases"]]
    assert prompts == ['{{ "a" * 10**9 }}', "{{ 2 ** 100000000 }}", "ababab"]
    assert "is not rendered" in suite.source
