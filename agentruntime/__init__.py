"""The agent runtime that the chat product, the Agent Server API and every deployed revision stand on.

Its face to the other apps is `agentruntime.services` (writes and what a run does), `agentruntime.selectors` (reads)
and its models; docs/architecture.md draws its parts.
"""
