"""Background jobs of destinations."""

from __future__ import annotations

from core.registry import periodic
from exports.destinations import services


@periodic("exports.purge_credentials", every_seconds=600)
def purge_credentials() -> None:
    """Erase retired credential versions once no unfinished export run pins them."""
    services.credential_versions_purge()
