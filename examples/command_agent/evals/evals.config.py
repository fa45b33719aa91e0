"""The command-agent example: a notes agent CLI run by the command harness.

The command runs in each trial's fresh workspace, so it names the agent by an absolute path
passed in the variant's environment. Under bwrap the project folder is not visible: the agent's
folder is exposed read-only with ``mounts``. Run it with ``anpord eval`` (local sandbox) or
``anpord eval --sandbox bwrap``.
"""

from pathlib import Path

from anpord import Variant, define_eval_config

AGENT_DIR = Path(__file__).resolve().parent.parent / "agent"

config = define_eval_config(
    variants=[
        Variant(
            name="notes-agent",
            harness='command:python3 "$AGENT_DIR/notes_agent.py"',
            env={"AGENT_DIR": str(AGENT_DIR)},
            mounts=[str(AGENT_DIR)],
        )
    ],
    timeout=30,
)
