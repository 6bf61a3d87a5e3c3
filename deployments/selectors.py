"""Reads for deployments, revisions and their logs, always within the caller's workspace."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, QuerySet

from accounts.models import Workspace
from core.exceptions import NotFound
from core.models import Job
from deployments import states
from deployments.models import Deployment, Revision, RevisionLog


def deployment_not_found(deployment_id: uuid.UUID | str) -> NotFound:
    return NotFound(f"Deployment ID {deployment_id} not found.")


def deployment_list(*, workspace: Workspace, name: str | None = None, name_contains: str | None = None,
                    status: str | None = None, deployment_type: str | None = None,
                    deployment_ids: list[uuid.UUID] | None = None) -> QuerySet[Deployment]:
    deployments = Deployment.objects.filter(workspace=workspace).select_related("latest_revision")
    if name:
        deployments = deployments.filter(name=name)
    if name_contains:
        deployments = deployments.filter(name__icontains=name_contains)
    if status:
        deployments = deployments.filter(status=status)
    if deployment_type:
        deployments = deployments.filter(deployment_type=deployment_type)
    if deployment_ids:
        deployments = deployments.filter(id__in=deployment_ids)
    return deployments.order_by("-created_at", "-id")


def deployment_get(*, workspace: Workspace, deployment_id: uuid.UUID) -> Deployment:
    deployment = (Deployment.objects.select_related("latest_revision")
                  .filter(workspace=workspace, id=deployment_id).first())
    if deployment is None:
        raise deployment_not_found(deployment_id)
    return deployment


def deployment_find(*, tenant_id: uuid.UUID, deployment_id: uuid.UUID) -> Deployment | None:
    """The deployment with this id in the workspace with this id, or None (any workspace: for the admin)."""
    return Deployment.objects.filter(workspace_id=tenant_id, id=deployment_id).first()


def revision_list(*, deployment: Deployment, statuses: list[str] | None = None) -> QuerySet[Revision]:
    revisions = deployment.revisions.all()
    if statuses:
        revisions = revisions.filter(status__in=statuses)
    return revisions.order_by("-number")


def revision_get(*, deployment: Deployment, revision_id: uuid.UUID) -> Revision:
    revision = deployment.revisions.filter(id=revision_id).first()
    if revision is None:
        raise NotFound(f"Revision ID {revision_id} not found.")
    return revision


def revision_list_failed() -> QuerySet[Revision]:
    """Failed revisions that are still their deployment's latest (every workspace): nothing newer fixed them."""
    return Revision.objects.filter(status__in=states.FAILED, deployment__latest_revision=F("pk")).exclude(
        deployment__status=Deployment.Status.AWAITING_DELETE)


def deployment_list_failing() -> QuerySet[Deployment]:
    """Deployments whose latest revision failed (every workspace): what `revision_list_failed` counts, by deployment."""
    return Deployment.objects.filter(latest_revision__in=revision_list_failed())


@dataclass
class LogQuery:
    type: str
    limit: int = 50
    order: str = "asc"
    offset: str | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    level: str | None = None
    query: str | None = None


def log_page(*, revisions: Iterable[Revision], params: LogQuery) -> tuple[list[RevisionLog], str | None]:
    """One page of log lines and the cursor for the next page.

    The cursor is the id of the last line returned: a follower polling with it sees only newer
    lines (order=asc), a pager walks back with it (order=desc). An empty page hands the given
    cursor back, so a follower keeps its place. A page shorter than the limit still gives one, not null: the log
    may grow, and langgraph-cli's build-log follower keeps its previous cursor on a null, printing the page again.
    """
    logs = RevisionLog.objects.filter(revision__in=revisions, type=params.type)
    if params.start_time:
        logs = logs.filter(timestamp__gte=params.start_time)
    if params.end_time:
        logs = logs.filter(timestamp__lt=params.end_time)
    if params.level:
        logs = logs.filter(level=params.level)
    if params.query:
        logs = logs.filter(message__icontains=params.query)
    descending = params.order == "desc"
    if params.offset:
        logs = logs.filter(id__lt=int(params.offset)) if descending else logs.filter(id__gt=int(params.offset))
    page = list(logs.order_by("-id" if descending else "id")[: params.limit])
    return page, (str(page[-1].id) if page else params.offset)


def revision_numbers(*, revision_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, int]:
    """Each revision's number (`#2`), by id: the label of its lines among several revisions' logs."""
    return dict(Revision.objects.filter(id__in=set(revision_ids)).values_list("id", "number"))


@dataclass(frozen=True)
class ProxyTarget:
    deployment: Deployment
    revision: Revision | None


def proxy_target(*, workspace: Workspace | None, deployment_id: uuid.UUID) -> ProxyTarget:
    """The deployment a proxied request goes to, and its active revision (None: nothing deployed yet).
    `workspace` None (a CORS preflight, which carries no API key) finds it in any workspace."""
    deployments = Deployment.objects.select_related("active_revision").filter(id=deployment_id)
    if workspace is not None:
        deployments = deployments.filter(workspace=workspace)
    deployment = deployments.exclude(status=Deployment.Status.AWAITING_DELETE).first()
    if deployment is None:
        raise deployment_not_found(deployment_id)
    return ProxyTarget(deployment, deployment.active_revision)


def teardown_deletes_tracing_project(*, deployment_id: uuid.UUID) -> bool:
    """Whether the DELETE that queued this deployment's teardown asked for its tracing project to go too."""
    return Job.objects.filter(kind="deployments.teardown", payload__deployment_id=str(deployment_id),
                              payload__delete_tracing_project=True).exists()
