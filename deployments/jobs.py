"""Job handlers of the revision pipeline (queue "deployments") and the reconciler."""

from __future__ import annotations

from django.conf import settings

from core.registry import RetryLater, job_handler, periodic
from deployments import pipeline, services
from deployments.databases import DatabaseInUse


@job_handler("deployments.build", queue="deployments")
def build(job, lease) -> None:
    """Fetch and build one revision."""
    pipeline.build_step(revision_id=job.payload["revision_id"], job=job, lease=lease)


@job_handler("deployments.deploy", queue="deployments")
def deploy(job, lease) -> None:
    """Start a built revision, health-check it and switch the deployment to it."""
    pipeline.deploy_step(revision_id=job.payload["revision_id"], job=job, lease=lease)


@job_handler("deployments.teardown", queue="deployments")
def teardown(job, lease) -> None:
    """Stop and remove a deleted deployment (and its tracing project when the DELETE asked for it)."""
    try:
        services.deployment_teardown(deployment_id=job.payload["deployment_id"],
                                     delete_tracing_project=job.payload.get("delete_tracing_project", False))
    except DatabaseInUse as exc:
        # A process of the deployment is still connected: come back once it is gone rather than cut it off.
        raise RetryLater(10, str(exc)) from None


@periodic("deployments.reconcile", every_seconds=settings.DEPLOY_RECONCILE_SECONDS)
def reconcile() -> None:
    """Restart active revisions that are not served (e.g. after a restart) and tidy up."""
    pipeline.reconcile()
