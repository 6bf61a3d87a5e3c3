"""Reclaiming the space of expired store items (agentruntime/jobs.py's periodic sweep, in every worker).

Apart from agentruntime/store/django_store.py, whose vectors and embeddings import numpy and LangChain: a worker that
only sweeps (or only exports) does not load them. Expired items are invisible to every read from their expiry on
already.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from agentruntime.models import StoreItem

SWEEP_BATCH = 1000


def store_sweep_expired(*, using: str = "default", now: datetime | None = None) -> int:
    """Delete every store's expired items (and their vectors), SWEEP_BATCH at a time; return how many."""
    now = now or timezone.now()
    deleted = 0
    while True:
        ids = list(StoreItem.objects.using(using).filter(expires_at__lte=now).values_list("id", flat=True)
                   [:SWEEP_BATCH])
        if not ids:
            return deleted
        _, per_model = StoreItem.objects.using(using).filter(id__in=ids, expires_at__lte=now).delete()
        deleted += per_model.get(StoreItem._meta.label, 0)
        if len(ids) < SWEEP_BATCH:
            return deleted
