"""A revision's serving process: its Django settings, ASGI application and URLs, and its commands (`serve_graphs`,
`check_graphs`), as an app of their own.

A serving process installs this app but not `deployments` itself: the control plane's models, jobs and imports
(tracing, the runners) are not a revision's concern, and leaving them out roughly halves the process's memory. Its
settings (settings.py) start from core/settings_env.py, never from the service's config.
"""
