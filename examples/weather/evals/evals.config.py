"""The example's run-wide settings: which agent the cases talk to, and how runs are scheduled."""

from anpord import define_eval_config

config = define_eval_config(
    harness="python:agents.weather:agent",
    trials=1,
    max_concurrency=8,
    timeout=30,
)
