"""The Node.js agent example: an agent server in another language, driven over HTTP.

Start the server first (`node server.mjs`, which listens on 127.0.0.1:8788), or point the suite
at a server elsewhere with `NODE_AGENT_URL` or `anpord eval --harness http://HOST:PORT`.
"""

import os

from anpord import define_eval_config

config = define_eval_config(
    harness=os.environ.get("NODE_AGENT_URL", "http://127.0.0.1:8788"),
    timeout=20,
)
