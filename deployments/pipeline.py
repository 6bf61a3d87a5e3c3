"""The revision pipeline, run by workers: build, deploy, and the reconciler (the teardown is
`services.deployment_teardown`, which a forced DELETE runs too).

Each step is one job. A step checks between (and during) its stages whether it must stop: the
revision was interrupted or superseded, or the worker lost its lease to another worker. A job
reclaimed from a dead worker runs the step again from the start, up to DEPLOY_STEP_MAX_ATTEMPTS
times; after that the revision ends *_FAILED, so nothing stays in BUILDING forever.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import F

from core.models import Job
from core.services import job_enqueue
from deployments import databases, services, states
from deployments.models import Deployment, Revision, RevisionLog
from deployments.processes import StepStopped
from deployments.runners import Runner, StepContext, StepFailed
from deployments.services import get_runner
from deployments.states import RevisionStatus as S

log = logging.getLogger("deployments.pipeline")
# The failure a revision whose pipeline job ended without finishing it gets, by the status it was left in.
FAILED_WHILE: dict[str, str] = {S.CREATING: S.CREATE_FAILED, S.QUEUED: S.CREATE_FAILED,
                                S.AWAITING_BUILD: S.BUILD_FAILED, S.BUILDING: S.BUILD_FAILED}


def _context(revision: Revision, log_type: str, should_stop) -> StepContext:
    """What the runner gets for one step, writing to the revision's build or deploy log."""
    return StepContext(revision, services.revision_log_sink(revision_id=revision.id, type=log_type), should_stop)


def _stop_check(revision: Revision, lease):
    """A should_stop() for a step: the reason to stop, or None. Reads the status at most once a second."""
    last: dict[str, Any] = {"at": 0.0, "status": revision.status}

    def should_stop() -> str | None:
        if lease is not None and lease.lost:
            return "this worker lost the job's lease to another worker"
        if time.monotonic() - last["at"] >= 1.0:
            last["at"] = time.monotonic()
            last["status"] = Revision.objects.filter(id=revision.id).values_list("status", flat=True).first()
        if last["status"] is None:
            return "the revision was deleted"
        if states.is_terminal(last["status"]):
            return f"the revision is now {last['status']}"
        return None

    return should_stop


def _load(revision_id: str) -> Revision | None:
    return Revision.objects.select_related("deployment").filter(id=revision_id).first()


def _advance(revision: Revision, to: str, message: str = "") -> None:
    if not services.revision_transition(revision=revision, to=to, message=message):
        status = Revision.objects.filter(id=revision.id).values_list("status", flat=True).first()
        raise StepStopped(f"the revision is now {status}" if status else "the revision was deleted")


def _gave_up(revision: Revision, job: Job, failed: str) -> bool:
    if job.attempts <= settings.DEPLOY_STEP_MAX_ATTEMPTS:
        if job.attempts > 1:
            services.log_append(revision=revision, type=RevisionLog.Type.BUILD, level=RevisionLog.Level.WARNING,
                                lines=[f"The worker running this step stopped; running it again "
                                       f"(attempt {job.attempts} of {settings.DEPLOY_STEP_MAX_ATTEMPTS})."])
        return False
    services.revision_transition(revision=revision, to=failed, message=(
        f"The worker running this step stopped {job.attempts - 1} times; giving up."))
    get_runner().stop(revision)
    return True


def _start_step(revision_id: str, job: Job, lease, log_type: str) -> tuple[Revision, StepContext] | None:
    """The revision a build or deploy step works on and the runner's context, or None when there is nothing to do:
    the revision is gone or finished, or the step gave up after its workers stopped too often."""
    revision = _load(revision_id)
    if revision is None or states.is_terminal(revision.status):
        return None
    if log_type == RevisionLog.Type.DEPLOY:
        failed = S.DEPLOY_FAILED
    else:
        failed = S.CREATE_FAILED if revision.status == S.QUEUED else S.BUILD_FAILED
    if _gave_up(revision, job, failed):
        return None
    return revision, _context(revision, log_type, _stop_check(revision, lease))


def build_step(*, revision_id: str, job: Job, lease) -> None:
    """QUEUED → AWAITING_BUILD (fetch) → BUILDING → AWAITING_DEPLOY, then queue the deploy step."""
    _run_step(revision_id, job, lease, RevisionLog.Type.BUILD, _build)


def deploy_step(*, revision_id: str, job: Job, lease) -> None:
    """AWAITING_DEPLOY → DEPLOYING → (healthy) DEPLOYED and active; the previous revision is then stopped."""
    _run_step(revision_id, job, lease, RevisionLog.Type.DEPLOY, _deploy)


def _build(revision: Revision, ctx: StepContext, runner: Runner) -> None:
    if revision.status == S.QUEUED:
        _advance(revision, S.AWAITING_BUILD)
    runner.fetch_source(ctx)
    if revision.status == S.AWAITING_BUILD:
        _advance(revision, S.BUILDING)
    runner.build(ctx)
    with transaction.atomic():
        _advance(revision, S.AWAITING_DEPLOY, "Build succeeded.")
        job_enqueue(kind="deployments.deploy", payload={"revision_id": str(revision.id)})


def _deploy(revision: Revision, ctx: StepContext, runner: Runner) -> None:
    if revision.status == S.AWAITING_DEPLOY:
        _advance(revision, S.DEPLOYING)
    _database_ensure(revision, ctx)
    runner.start(ctx)
    runner.wait_healthy(ctx)
    previous = services.revision_activate(revision=revision)
    ctx.log("This revision is now the one served at the deployment's URL.")
    if previous is not None:
        _retire(previous, replaced_by=revision, runner=runner)


def _database_ensure(revision: Revision, ctx: StepContext) -> None:
    """The deployment's database exists before any of its revisions starts (created by the first one)."""
    had_one = bool(revision.deployment.database_name)
    try:
        database = services.deployment_database_ensure(deployment=revision.deployment)
    except databases.DatabaseError as exc:
        raise StepFailed(str(exc)) from None
    if not had_one:
        where = "PostgreSQL database" if database.engine == "postgresql" else "SQLite database"
        ctx.log(f"Created the deployment's {where} {database.name}: every revision serves from it.")


def _retire(previous: Revision, *, replaced_by: Revision, runner: Runner) -> None:
    """Stop a replaced revision once its requests in flight are done (the proxy sends it no new ones).

    Requests still open after DEPLOY_DRAIN_SECONDS (long streams) are cut: their events are in the deployment's
    database, so a client rejoins on the new revision with Last-Event-ID and misses nothing. Runs it was executing
    are taken over when their lease expires (agentruntime.services.runs_sweep_dead, in the new revision's processes).
    """
    still_open = runner.drain(previous, timeout=settings.DEPLOY_DRAIN_SECONDS)
    runner.stop(previous)
    runner.discard(previous)
    cut = f" ({still_open} request(s) still open were cut)" if still_open else ""
    services.log_append(revision=previous, type=RevisionLog.Type.DEPLOY,
                        lines=[f"Replaced by revision #{replaced_by.number}; drained and stopped{cut}."])


def _run_step(revision_id: str, job: Job, lease, log_type: str,
              stages: Callable[[Revision, StepContext, Runner], None]) -> None:
    """Run a build or deploy step's stages. The runner's StepFailed or an unexpected error ends the revision
    BUILD_FAILED or DEPLOY_FAILED; a stop (the revision was interrupted or superseded, or the lease lost) leaves
    its status to whoever stopped it."""
    started = _start_step(revision_id, job, lease, log_type)
    if started is None:
        return
    revision, ctx = started
    step, failed = ("deploy", S.DEPLOY_FAILED) if log_type == RevisionLog.Type.DEPLOY else ("build", S.BUILD_FAILED)
    try:
        stages(revision, ctx, get_runner())
    except StepFailed as exc:
        ctx.sink.flush()
        _fail(revision, failed, str(exc))
    except (StepStopped, services.StaleRevision) as exc:
        _stopped(ctx, lease, exc)
    except Exception as exc:
        log.exception("%s of revision %s failed", step, revision.id)
        _fail(revision, failed, f"Internal error during the {step} ({type(exc).__name__}).")


def _fail(revision: Revision, failed: str, message: str) -> None:
    """End a revision whose step failed: nothing of it stays served or on disk (stopping one that is not served
    does nothing)."""
    runner = get_runner()
    runner.stop(revision)
    services.revision_transition(revision=revision, to=failed, message=message)
    runner.discard(revision)


def _stopped(ctx: StepContext, lease, exc: Exception) -> None:
    ctx.log(f"Step stopped: {exc}.", "WARNING")
    if lease is None or not lease.lost:
        get_runner().stop(ctx.revision)
        get_runner().discard(ctx.revision)


def reconcile() -> None:
    """Bring active revisions back after a restart (or the replicas of one that died), stop strays, and fail
    revisions whose job is gone."""
    runner = get_runner()
    keep = set()
    active = Revision.objects.select_related("deployment").filter(
        deployment__status=Deployment.Status.READY, deployment__active_revision_id=F("id"))
    for revision in active:
        keep.add(revision.id)
        restart, replicas = _replicas_to_restart(runner, revision)
        if len(restart) == replicas:
            _restart(revision)
        elif restart:
            _restart_replicas(revision, restart)
    keep |= set(Revision.objects.filter(status=S.DEPLOYING).values_list("id", flat=True))
    runner.stop_strays(keep)
    _fail_orphans()


def _replicas_to_restart(runner, revision: Revision) -> tuple[list[int], int]:
    """The replicas of `revision` to start again, and how many it has. Gone: restart. Running but not answering /ok:
    restart only if it did not answer last time either.

    A process busy with a long chat run may miss one health check; it is not killed for that.
    """
    health = runner.replica_health(revision)
    restart = []
    for replica in health:
        key = f"deployments:unhealthy:{revision.id}:{replica.index}"
        if replica.healthy:
            cache.delete(key)
        elif replica.running and not cache.get(key):
            cache.set(key, True, timeout=settings.DEPLOY_RECONCILE_SECONDS * 4)
        else:
            cache.delete(key)
            restart.append(replica.index)
    return restart, len(health)


def _restart(revision: Revision) -> None:
    runner = get_runner()
    ctx = _context(revision, RevisionLog.Type.DEPLOY, lambda: None)
    ctx.log("The active revision is not being served; starting it again.", "WARNING")
    try:
        _database_ensure(revision, ctx)
        runner.start(ctx)
        runner.wait_healthy(ctx)
    except (StepFailed, StepStopped) as exc:
        ctx.log(f"Restart failed: {exc}", "ERROR")
        runner.stop(revision)
        return
    still_active = Deployment.objects.filter(id=revision.deployment_id, active_revision=revision,
                                             status=Deployment.Status.READY).exists()
    if not still_active:
        runner.stop(revision)


def _restart_replicas(revision: Revision, indexes: list[int]) -> None:
    """Start the dead replicas of a revision whose others still serve, one by one (the proxy skips them
    meanwhile); one that does not come back is tried again on the next round."""
    runner = get_runner()
    ctx = _context(revision, RevisionLog.Type.DEPLOY, lambda: None)
    for index in indexes:
        ctx.log(f"Replica {index + 1} of the active revision is not being served; starting it again.", "WARNING")
        try:
            runner.restart_replica(ctx, index)
        except (StepFailed, StepStopped) as exc:
            ctx.log(f"Restart of replica {index + 1} failed: {exc}", "ERROR")


def _fail_orphans() -> None:
    """A live revision with no queued or running job of its own would wait forever: end it.

    Revisions are read before jobs: a step that ends enqueues the next one in the same transaction,
    so a revision that was live before the jobs were read either has a pending job or is an orphan.
    """
    live = list(Revision.objects.exclude(status__in=states.TERMINAL).exclude(status=S.UNKNOWN))
    pending = Job.objects.filter(kind__startswith="deployments.", status__in=[Job.Status.QUEUED, Job.Status.RUNNING])
    waiting = {str(p.get("revision_id")) for p in pending.values_list("payload", flat=True)}
    for revision in live:
        if str(revision.id) in waiting:
            continue
        revision.refresh_from_db(fields=["status"])
        failed = FAILED_WHILE.get(revision.status, S.DEPLOY_FAILED)
        services.revision_transition(revision=revision, to=failed, message="Its pipeline job ended without "
                                     "finishing it.")
