"""Settings of a revision's serving process (`serve_graphs`): the service's settings, routed to chat only.

The environment (deployments/environment.py) gives it its own SQLite database and keys; here it
only changes what is served: the Agent Server API, the chat protocol routes and /ok, nothing else.
"""

from __future__ import annotations

from config.settings import *  # noqa: F403

ROOT_URLCONF = "deployments.serving_urls"
ASGI_APPLICATION = "deployments.serving_asgi.application"
SERVE_STATIC = False
CHAT_RUN_EXECUTOR = "web"  # a revision executes its own runs: nothing else serves its graphs
