"""The job queue: leases, reclaiming a dead worker's job, periodic jobs that run once."""

from __future__ import annotations

import logging
import signal
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from core import services
from core.models import Job, PeriodicLease
from core.registry import HANDLERS, PERIODICS, Handler, Periodic, RetryLater
from core.worker import Worker

pytestmark = pytest.mark.django_db

calls: list = []


@pytest.fixture
def registered(monkeypatch):
    calls.clear()

    def record(job, lease):
        calls.append(job.payload["n"])

    def retry(job, lease):
        raise RetryLater(60, "not yet")

    def fail(job, lease):
        raise ValueError("broken")

    monkeypatch.setitem(HANDLERS, "test.record", Handler("default", record))
    monkeypatch.setitem(HANDLERS, "test.retry", Handler("default", retry))
    monkeypatch.setitem(HANDLERS, "test.fail", Handler("default", fail))


def test_a_worker_runs_a_queued_job_once(registered):
    job = services.job_enqueue(kind="test.record", payload={"n": 1})
    worker = Worker(run_periodic=False)
    assert worker.run_once() is True
    assert worker.run_once() is False
    job.refresh_from_db()
    assert calls == [1]
    assert job.status == Job.Status.DONE and job.attempts == 1


def test_two_workers_never_claim_the_same_job(registered):
    services.job_enqueue(kind="test.record", payload={"n": 1})
    first = services.job_claim(worker_id="a", queues=None, lease_seconds=60)
    second = services.job_claim(worker_id="b", queues=None, lease_seconds=60)
    assert first is not None and second is None


def test_a_job_whose_lease_expired_is_reclaimed(registered):
    services.job_enqueue(kind="test.record", payload={"n": 1})
    job = services.job_claim(worker_id="dead", queues=None, lease_seconds=60)
    Job.objects.filter(id=job.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    reclaimed = services.job_claim(worker_id="alive", queues=None, lease_seconds=60)
    assert reclaimed.id == job.id and reclaimed.lease_owner == "alive" and reclaimed.attempts == 2
    assert services.job_finish(job=job, worker_id="dead") is False


def test_queues_filter_what_a_worker_claims(registered):
    services.job_enqueue(kind="test.record", payload={"n": 1}, queue="exports")
    assert services.job_claim(worker_id="a", queues=["deployments"], lease_seconds=60) is None
    assert services.job_claim(worker_id="a", queues=["exports"], lease_seconds=60) is not None


def test_retry_later_puts_the_job_back_with_a_delay(registered):
    job = services.job_enqueue(kind="test.retry")
    Worker(run_periodic=False).run_once()
    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED and job.run_after > timezone.now() + timedelta(seconds=50)


def test_a_failing_job_is_marked_failed_with_its_error(registered):
    job = services.job_enqueue(kind="test.fail")
    Worker(run_periodic=False).run_once()
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "broken" in job.last_error


def test_a_periodic_job_runs_once_per_interval_across_workers(monkeypatch):
    ran = []
    monkeypatch.setattr("core.worker.PERIODICS", {"test.tick": Periodic("test.tick", 3600, lambda: ran.append(1))})
    workers = [Worker() for _ in range(3)]
    for worker in workers:
        worker.run_due_periodics()
    assert ran == [1]
    lease = PeriodicLease.objects.get(name="test.tick")
    assert lease.next_run_at > timezone.now() + timedelta(minutes=59)
    assert lease.lease_owner == ""


def test_a_periodic_job_that_changes_nothing_logs_only_at_debug(monkeypatch, caplog):
    idle = Periodic("test.idle", 3600, lambda: list(Job.objects.filter(status=Job.Status.QUEUED)))
    monkeypatch.setattr("core.worker.PERIODICS", {"test.idle": idle})
    with caplog.at_level(logging.DEBUG, logger="core.worker"):
        assert Worker().run_due_periodics() is True
    assert [r.levelno for r in caplog.records] == [logging.DEBUG, logging.DEBUG]
    assert "periodic end name=test.idle status=done rows_changed=0" in caplog.records[-1].getMessage()


def test_a_periodic_job_that_changes_rows_or_fails_logs_its_end_at_info(monkeypatch, caplog):
    def enqueue_two():
        services.job_enqueue(kind="core.noop")
        services.job_enqueue(kind="core.noop")

    def broken():
        raise ValueError("broken")

    monkeypatch.setattr("core.worker.PERIODICS", {"test.busy": Periodic("test.busy", 3600, enqueue_two),
                                                  "test.broken": Periodic("test.broken", 3600, broken)})
    with caplog.at_level(logging.INFO, logger="core.worker"):
        Worker().run_due_periodics()
    ends = [r.getMessage() for r in caplog.records if r.getMessage().startswith("periodic end")]
    assert ends[0].startswith("periodic end name=test.busy status=done rows_changed=2 ")
    assert ends[1].startswith("periodic end name=test.broken status=failed rows_changed=0 ")


@pytest.mark.live
def test_an_idle_worker_logs_nothing_about_its_periodic_jobs_at_info(start_process):
    worker = start_process("run_worker", env={"LOG_LEVEL": "INFO"})
    finished = PeriodicLease.objects.filter(name__in=list(PERIODICS), last_finished_at__isnull=False, lease_owner="")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and finished.count() < len(PERIODICS):  # all are due at the start
        time.sleep(0.2)
    assert finished.count() == len(PERIODICS)
    worker.process.send_signal(signal.SIGTERM)
    assert worker.process.wait(15) == 0
    assert "periodic" not in worker.output()


@pytest.mark.live
def test_run_worker_processes_jobs_and_logs_start_and_end(start_process):
    job = services.job_enqueue(kind="core.noop", payload={})
    worker = start_process("run_worker")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and Job.objects.get(id=job.id).status != Job.Status.DONE:
        time.sleep(0.1)
    assert Job.objects.get(id=job.id).status == Job.Status.DONE
    worker.process.send_signal(signal.SIGTERM)
    assert worker.process.wait(15) == 0
    log = worker.output()
    assert f"job start kind=core.noop id={job.id}" in log
    assert f"job end kind=core.noop id={job.id} status=done" in log


@pytest.mark.live
def test_a_job_of_a_killed_worker_is_finished_by_another(start_process):
    job = services.job_enqueue(kind="core.sleep", payload={"seconds": 30})
    first = start_process("run_worker", env={"WORKER_LEASE_SECONDS": "2"})
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and Job.objects.get(id=job.id).status != Job.Status.RUNNING:
        time.sleep(0.1)
    first.kill(signal.SIGKILL)
    Job.objects.filter(id=job.id).update(payload={"seconds": 0})
    start_process("run_worker", env={"WORKER_LEASE_SECONDS": "2"})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and Job.objects.get(id=job.id).status != Job.Status.DONE:
        time.sleep(0.2)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.attempts == 2


def test_a_periodic_jobs_only_worker_claims_no_queued_job_and_names_no_queue(registered, caplog):
    job = services.job_enqueue(kind="test.record", payload={"n": 1})
    worker = Worker(run_periodic=False, claim_jobs=False)
    assert worker.run_once() is False
    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED and calls == []
    stop = threading.Event()
    stop.set()
    with caplog.at_level(logging.INFO, logger="core.worker"):
        worker.run_forever(stop)
    assert "periodic jobs only" in caplog.text and "queues" not in caplog.text
