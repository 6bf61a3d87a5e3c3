"""Housekeeping: flows are only needed while they can still complete or be waited on."""

from __future__ import annotations

import logging

from agentauth import services
from core.registry import periodic

log = logging.getLogger("agentauth")


@periodic("agentauth.purge_flows", every_seconds=3600)
def purge_flows() -> None:
    deleted = services.flows_purge()
    if deleted:
        log.info("Purged %s finished OAuth flow(s)", deleted)
