"""Delete runs older than the retention period, in batches of primary keys with short transactions."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from tracing import services


class Command(BaseCommand):
    help = "Delete runs that started more than --days (default TRACING_RETENTION_DAYS) days ago."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=None,
                            help="Retention in days; default TRACING_RETENTION_DAYS. 0 keeps everything.")
        parser.add_argument("--batch-size", type=int, default=1000, help="Runs deleted per transaction.")
        parser.add_argument("--pause", type=float, default=0.0,
                            help="Seconds to sleep between batches, to leave room for ingestion.")

    def handle(self, *args, days, batch_size, pause, **options):
        days = settings.TRACING_RETENTION_DAYS if days is None else days
        if days < 0 or batch_size < 1:
            raise CommandError("--days must be 0 or more and --batch-size at least 1.")
        if days == 0:
            self.stdout.write("Retention is off (0 days): nothing deleted.")
            return
        cutoff = timezone.now() - timedelta(days=days)
        deleted = services.runs_prune(older_than=cutoff, batch_size=batch_size, pause_seconds=pause)
        self.stdout.write(f"Deleted {deleted} runs that started before {cutoff.isoformat()}.")
