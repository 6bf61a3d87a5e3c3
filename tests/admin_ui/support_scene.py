"""Rows for the admin to show, made the way the service makes them (services, the API's paths, a worker)."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.utils import timezone

from accounts.services import api_key_create, workspace_create
from agentruntime.models import ChatRun, ChatThread
from agentruntime.store.django_store import DjangoStore
from core.exceptions import ServiceError
from core.models import Job
from core.services import job_enqueue
from deployments import services as deployment_services
from deployments.models import Deployment, Revision, RevisionLog
from exports.bulk_exports import services as export_services
from exports.bulk_exports.models import BulkExport, BulkExportRun
from exports.destinations import services
from exports.destinations.models import Destination
from tests.exports.support_destinations import BUCKET, WRITE_ACTIONS
from tests.exports.support_exports import DAY1, drain, seed_trace_runs
from tests.support_s3 import allow
from tracing.models import TracingProject

LONG_NAME = "Nightly trace archive for the research and evaluation team (eu-central, long retention)"


def workspace(name: str = "research-and-evaluation-workspace"):
    return workspace_create(name=name)


def destination(s3, ws, *, name: str = LONG_NAME, user: str = "writer", actions=WRITE_ACTIONS) -> Destination:
    """A destination on the moto server whose credentials may do `actions` in the bucket (created if missing)."""
    if BUCKET not in [b["Name"] for b in s3.client().list_buckets()["Buckets"]]:
        s3.create_bucket(BUCKET)
    iam_user = f"{user}-{uuid.uuid4().hex[:6]}"
    credentials = s3.create_user(iam_user, [allow(actions, BUCKET)])
    config = {"bucket_name": BUCKET, "prefix": "exports", "endpoint_url": s3.endpoint, "region": None,
              "include_bucket_in_prefix": True, "config_kwargs_s3": {"addressing_style": "path"}}
    created = services.destination_create(workspace=ws, display_name=name, config=config,
                                          credentials=credentials.as_dict())
    created.iam_user = iam_user
    return created


def workspace_with_destination(s3) -> tuple:
    """A new workspace and a healthy destination in it: the start of most admin scenes."""
    ws = workspace()
    return ws, destination(s3, ws)


def failing_destination(s3, ws) -> Destination:
    """A destination whose credentials lost their permissions, re-validated (which failed and was recorded)."""
    broken = destination(s3, ws, name="Archive whose credentials lost their policy", user="broken")
    s3.client("iam").delete_user_policy(UserName=broken.iam_user, PolicyName=f"{broken.iam_user}-policy")
    s3.set_auth_enforced(True)
    try:
        services.destination_validate(destination=broken)
    except ServiceError:
        pass
    else:
        raise AssertionError("the test write should have been refused")
    finally:
        s3.set_auth_enforced(False)
    broken.refresh_from_db()
    return broken


def project(ws, *, days: int = 2) -> TracingProject:
    tracing_project = TracingProject.objects.create(workspace=ws, name="research-agent-production")
    seed_trace_runs(ws, tracing_project, days=days, per_day=3)
    return tracing_project


def export(ws, dest: Destination, tracing_project: TracingProject, *, days: int = 2) -> BulkExport:
    return export_services.export_create(workspace=ws, destination_id=dest.id, session_id=tracing_project.id,
                                         start_time=DAY1, end_time=DAY1 + timedelta(days=days))


def failed_export(ws, dest: Destination, tracing_project: TracingProject) -> BulkExport:
    """An export whose runs failed (its destination was deleted while they waited), the destination back after."""
    failing = export(ws, dest, tracing_project)
    Destination.objects.filter(id=dest.id).update(deleted_at=timezone.now())
    drain()
    Destination.objects.filter(id=dest.id).update(deleted_at=None)
    failing.refresh_from_db()
    assert failing.status == "Failed", failing.status
    return failing


def stuck_export_run(ws, dest: Destination, tracing_project: TracingProject) -> BulkExportRun:
    """A running run whose job's lease ran out: its worker died."""
    stuck = export(ws, dest, tracing_project, days=1)
    run = stuck.export_runs.get()
    job = job_enqueue(kind=export_services.EXPORT_RUN_JOB, payload={"run_id": str(run.id)})
    Job.objects.filter(id=job.id).update(status=Job.Status.RUNNING, lease_owner="gone",
                                         lease_expires_at=timezone.now() - timedelta(minutes=5))
    BulkExportRun.objects.filter(id=run.id).update(status="Running", job_id=job.id,
                                                   started_at=timezone.now() - timedelta(minutes=10))
    BulkExport.objects.filter(id=stuck.id).update(status="Running")
    return BulkExportRun.objects.get(id=run.id)


def chat_runs() -> ChatRun:
    """A finished chat run, and one whose process stopped beating ten minutes ago (returned)."""
    thread = ChatThread.objects.create(id=str(uuid.uuid4()), owner_kind="anonymous",
                                       title="Research the history of the abacus", has_state=True)
    ChatRun.objects.create(id=uuid.uuid4(), thread=thread, status="completed", finished_at=timezone.now())
    other = ChatThread.objects.create(id=str(uuid.uuid4()), owner_kind="anonymous", title="Plan a trip")
    return ChatRun.objects.create(id=uuid.uuid4(), thread=other, worker="host-1:4242",
                                  heartbeat_at=timezone.now() - timedelta(minutes=10))


def store_items() -> None:
    """A remembered fact with a long namespace and key, and one that expires in an hour."""
    store = DjangoStore(scope="anonymous")
    store.put(("memories", "preferences", "favourite-things-of-the-user"), "favourite-number-and-why-it-matters",
              {"content": "The user's favourite number is 7, since their first football shirt had it."})
    store.put(("memories",), "meeting", {"content": "Standup moved to 9:30"}, ttl=60)


def deployment(ws, *, name: str = "research-agent", failed_latest: bool = True) -> Deployment:
    """A github deployment: #1 deployed then replaced by #2 (served), and #3 whose build failed (the latest)."""
    deployed = Deployment.objects.create(workspace=ws, name=name, source="github", status="READY",
                                         source_config={"repo_url": "https://github.com/example/research-agent"})
    revisions = []
    statuses = ["DEPLOYED", "DEPLOYED"] + (["BUILD_FAILED"] if failed_latest else [])
    for number, status in enumerate(statuses, start=1):
        revision = Revision.objects.create(deployment=deployed, number=number, status=status, source="github",
                                           repo_url=deployed.source_config["repo_url"], repo_ref="main",
                                           status_message="Serving." if status == "DEPLOYED" else
                                           "pip install failed: No matching distribution found for langgraph==9.9")
        deployment_services.log_append(revision=revision, type=RevisionLog.Type.BUILD,
                                       lines=[f"Revision #{number} created.", "Cloning main", "Installing"])
        if status == "BUILD_FAILED":
            deployment_services.log_append(revision=revision, type=RevisionLog.Type.BUILD, level="ERROR",
                                           lines=["BUILD_FAILED: pip install failed"])
        else:
            deployment_services.log_append(revision=revision, type=RevisionLog.Type.DEPLOY,
                                           lines=["Started on 127.0.0.1:9999", "DEPLOYED: Serving."])
        revisions.append(revision)
    Deployment.objects.filter(id=deployed.id).update(active_revision=revisions[1], latest_revision=revisions[-1])
    deployed.refresh_from_db()
    return deployed


def api_key(ws):
    return api_key_create(workspaces=[ws], name="ci-pipeline-for-nightly-evaluations")
