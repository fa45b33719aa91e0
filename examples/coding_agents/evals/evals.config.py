"""Two coding agents on one repository task, and one of them with and without a profile.

Each variant runs the real CLI (installed with npm, see README.md) in a bubblewrap sandbox with the
network open (the CLI calls its model's API) and its key passed as a secret: set
ANTHROPIC_API_KEY and OPENAI_API_KEY (or CODEX_API_KEY) before `anpord eval`.
"""

from anpord import Variant, define_eval_config

AGENT = dict(sandbox="bwrap", network=True)

config = define_eval_config(
    variants=[
        Variant(harness="claude", model="claude-sonnet-4-5", secrets=["ANTHROPIC_API_KEY"], **AGENT),
        Variant(harness="codex", model="gpt-5-codex", secrets=["OPENAI_API_KEY"], **AGENT),
        Variant(harness="claude", model="claude-sonnet-4-5", profile="careful",
                secrets=["ANTHROPIC_API_KEY"], **AGENT),
    ],
    trials=3,
    timeout=600,
)
