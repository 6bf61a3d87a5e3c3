"""How export jobs tell destinations what they still use.

Two rules of destinations depend on export jobs:
- a destination cannot be deleted (409) while an unfinished export uses it;
- a retired credential version is purged only when no unfinished export run pins it.

Export models are not known here, so export code registers a provider, e.g. in its app module:

    from exports import usage

    usage.register(
        "bulk-exports",
        destinations_in_use=lambda ids: set(
            BulkExport.objects.unfinished().filter(destination_id__in=ids).values_list("destination_id", flat=True)),
        pinned_credential_versions=lambda ids: set(
            BulkExportRun.objects.unfinished().filter(credential_version_id__in=ids)
            .values_list("credential_version_id", flat=True)),
    )

Each function gets a list of ids and returns the subset still in use. Registering again under
the same name replaces the provider (tests use that).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

IdsInUse = Callable[[list[uuid.UUID]], Iterable[uuid.UUID]]


@dataclass(frozen=True)
class UsageProvider:
    destinations_in_use: IdsInUse
    pinned_credential_versions: IdsInUse


_providers: dict[str, UsageProvider] = {}


def register(name: str, *, destinations_in_use: IdsInUse, pinned_credential_versions: IdsInUse) -> None:
    _providers[name] = UsageProvider(destinations_in_use, pinned_credential_versions)


def unregister(name: str) -> None:
    _providers.pop(name, None)


def destinations_in_use(ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    """The destinations among `ids` that an unfinished export still uses."""
    return _ask("destinations_in_use", ids)


def pinned_credential_versions(ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    """The credential versions among `ids` that an unfinished export run has pinned."""
    return _ask("pinned_credential_versions", ids)


def _ask(question: str, ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    ids = list(ids)
    found: set[uuid.UUID] = set()
    if not ids:
        return found
    for provider in list(_providers.values()):
        found.update(uuid.UUID(str(i)) for i in getattr(provider, question)(ids))
    return found
