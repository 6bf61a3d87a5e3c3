"""The commands of a revision's process (`serve_graphs`, `check_graphs`), as an app of their own.

A serving process installs this app but not `deployments` itself: the control plane's models, jobs and imports
(tracing, the runners) are not a revision's concern, and leaving them out roughly halves the process's memory.
"""
