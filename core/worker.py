"""The loop behind `run_worker`: periodic jobs first, then one queued job at a time."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection, connections

from core import services
from core.models import Job
from core.registry import HANDLERS, PERIODICS, RetryLater

log = logging.getLogger("core.worker")


def new_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Lease:
    """Keeps a job's lease alive from a side thread while its handler runs.

    `lost` turns true when the lease could not be renewed (another worker took the job
    over after it expired); handlers doing long work should check it between steps.
    """

    def __init__(self, *, job: Job, worker_id: str, lease_seconds: float):
        self.job = job
        self.worker_id = worker_id
        self.lease_seconds = lease_seconds
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew_loop, name=f"lease-{job.id}", daemon=True)

    def __enter__(self) -> Lease:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _renew_loop(self) -> None:
        try:
            while not self._stop.wait(self.lease_seconds / 3):
                if not services.job_renew_lease(job=self.job, worker_id=self.worker_id,
                                                lease_seconds=self.lease_seconds):
                    self.lost = True
                    return
        finally:
            connections.close_all()


class RowsChanged:
    """An execute wrapper counting the rows that INSERT, UPDATE and DELETE statements change on a connection."""

    _WRITES = ("INSERT", "UPDATE", "DELETE")

    def __init__(self) -> None:
        self.rows = 0

    def __call__(self, execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if sql.lstrip()[:6].upper() in self._WRITES:
            self.rows += max(context["cursor"].rowcount, 0)
        return result


class Worker:
    def __init__(self, *, queues: list[str] | None = None, worker_id: str | None = None,
                 lease_seconds: float | None = None, run_periodic: bool = True, claim_jobs: bool = True):
        # claim_jobs=False: periodic jobs only (a serving process has no job queue of its own).
        self.queues = queues or None
        self.claim_jobs = claim_jobs
        self.worker_id = worker_id or new_worker_id()
        self.lease_seconds = lease_seconds or settings.WORKER_LEASE_SECONDS
        self.run_periodic = run_periodic

    def run_forever(self, stop: threading.Event) -> None:
        serves = f"queues: {','.join(self.queues or ['all'])}" if self.claim_jobs else "periodic jobs only"
        log.info("worker %s started (%s)", self.worker_id, serves)
        while not stop.is_set():
            close_old_connections()
            try:
                did_work = self.run_once()
            except DatabaseError as exc:
                # A full disk or a lost database: wait and try again rather than exit (and be restarted) in a loop.
                log.error("worker %s: the database is unavailable (%s: %s); retrying", self.worker_id,
                          type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
                stop.wait(max(5.0, settings.WORKER_POLL_SECONDS))
                continue
            if not did_work:
                stop.wait(settings.WORKER_POLL_SECONDS)
        log.info("worker %s stopped", self.worker_id)

    def run_once(self) -> bool:
        ran_periodic = self.run_due_periodics() if self.run_periodic else False
        if not self.claim_jobs:
            return ran_periodic
        job = services.job_claim(worker_id=self.worker_id, queues=self.queues, lease_seconds=self.lease_seconds)
        if job is None:
            return ran_periodic
        self.run_job(job)
        return True

    def run_due_periodics(self) -> bool:
        ran = False
        for periodic in PERIODICS.values():
            if services.periodic_claim(name=periodic.name, worker_id=self.worker_id,
                                       every_seconds=periodic.every_seconds, lease_seconds=self.lease_seconds):
                self._run_periodic(periodic)
                ran = True
        return ran

    def _run_periodic(self, periodic) -> None:
        """Run one periodic job; its end is logged at INFO only when it changed something (or failed)."""
        started = time.monotonic()
        log.debug("periodic start name=%s", periodic.name)
        error = ""
        changes = RowsChanged()
        try:
            with connection.execute_wrapper(changes):
                periodic.func()
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            log.exception("periodic failed name=%s", periodic.name)
        services.periodic_release(name=periodic.name, worker_id=self.worker_id, error=error)
        # Most runs of a sweep find nothing to do: at INFO they would be lines every few seconds saying so.
        level = logging.INFO if error or changes.rows else logging.DEBUG
        log.log(level, "periodic end name=%s status=%s rows_changed=%d seconds=%.3f", periodic.name,
                "failed" if error else "done", changes.rows, time.monotonic() - started)

    def run_job(self, job: Job) -> None:
        handler = HANDLERS.get(job.kind)
        started = time.monotonic()
        log.info("job start kind=%s id=%s attempt=%s", job.kind, job.id, job.attempts)
        if handler is None:
            services.job_finish(job=job, worker_id=self.worker_id, error=f"No handler for job kind {job.kind!r}")
            log.error("job end kind=%s id=%s status=failed reason=unknown-kind", job.kind, job.id)
            return
        outcome = "done"
        with Lease(job=job, worker_id=self.worker_id, lease_seconds=self.lease_seconds) as lease:
            try:
                handler.func(job, lease)
            except RetryLater as retry:
                outcome = "requeued"
                services.job_requeue(job=job, worker_id=self.worker_id, delay=retry.delay, reason=retry.reason)
            except Exception as exc:
                outcome = "failed"
                log.exception("job failed kind=%s id=%s", job.kind, job.id)
                services.job_finish(job=job, worker_id=self.worker_id, error=f"{type(exc).__name__}: {exc}")
            else:
                services.job_finish(job=job, worker_id=self.worker_id)
        log.info("job end kind=%s id=%s status=%s seconds=%.3f", job.kind, job.id, outcome,
                 time.monotonic() - started)
