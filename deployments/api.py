"""The /v2 deployments API: one view per operation; rules live in services and selectors."""

from __future__ import annotations

import json

from django.core.serializers.json import DjangoJSONEncoder
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from deployments import selectors, services
from deployments import serializers as s
from deployments.models import Deployment, Revision

READ, MANAGE = "deployments:read", "deployments:manage"
NOT_FOUND = {404: None, 422: None}


def _plain(data) -> dict:
    """Validated data as plain JSON values (UUIDs as strings), as it is stored and compared."""
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def revision_config(revision: Revision | None) -> dict:
    fields = ("repo_ref", "langgraph_config_path", "image_uri", "source_tarball_path", "repo_commit_sha")
    return {field: getattr(revision, field) if revision else None for field in fields}


def deployment_data(deployment: Deployment) -> dict:
    stored = deployment.source_config
    source_config = {key: stored.get(key) for key in s.SourceConfigOutput().fields}
    source_config.update(deployment_type=deployment.deployment_type, custom_url=services.custom_url(deployment))
    return {
        "id": deployment.id, "tenant_id": deployment.workspace_id, "name": deployment.name,
        "source": deployment.source, "source_config": source_config,
        "source_revision_config": revision_config(deployment.latest_revision),
        "secrets": [{"name": name} for name in deployment.secret_names],
        "status": deployment.status, "latest_revision_id": deployment.latest_revision_id,
        "active_revision_id": deployment.active_revision_id, "image_version": None,
        "created_at": deployment.created_at, "updated_at": deployment.updated_at,
    }


def deployment_response(deployment: Deployment, status: int = 200) -> Response:
    return Response(s.DeploymentOutput(deployment_data(deployment)).data, status=status)


def revision_data(revision: Revision) -> dict:
    return {"id": revision.id, "created_at": revision.created_at, "updated_at": revision.updated_at,
            "status": revision.status, "source": revision.source,
            "source_revision_config": revision_config(revision)}


def deployment_from_path(request, deployment_id: str) -> Deployment:
    return selectors.deployment_get(workspace=request.user.workspace,
                                    deployment_id=s.parse_path_uuid(deployment_id, "deployment_id"))


def revision_from_path(request, deployment_id: str, revision_id: str) -> tuple[Deployment, Revision]:
    deployment = deployment_from_path(request, deployment_id)
    revision = selectors.revision_get(deployment=deployment,
                                      revision_id=s.parse_path_uuid(revision_id, "revision_id"))
    return deployment, revision


class DeploymentListApi(APIView):
    required_permission = READ

    @extend_schema(parameters=[s.DeploymentListQuery], responses={200: s.DeploymentsListOutput, 422: None},
                   operation_id="list_deployments")
    def get(self, request):
        query = s.validate_query(s.DeploymentListQuery, request.query_params)
        deployments = selectors.deployment_list(
            workspace=request.user.workspace, name=query.get("name"), name_contains=query.get("name_contains"),
            status=query.get("status"), deployment_type=query.get("deployment_type"),
            deployment_ids=query.get("deployment_ids"))
        offset = query["offset"]
        page = list(deployments[offset: offset + query["limit"]])
        return Response(s.DeploymentsListOutput({"resources": [deployment_data(d) for d in page],
                                                 "offset": offset + len(page)}).data)


class DeploymentCreateApi(APIView):
    required_permission = MANAGE
    throttle_scope = "deployment-write"

    @extend_schema(request=s.DeploymentCreateInput, responses={201: s.DeploymentOutput, 400: None, 409: None,
                                                               422: None},
                   parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=False)],
                   operation_id="create_deployment")
    def post(self, request):
        serializer = s.DeploymentCreateInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = _plain(serializer.validated_data)
        result = services.deployment_create(
            workspace=request.user.workspace, name=data["name"], source=data["source"],
            source_config=data.get("source_config") or {}, source_revision_config=data.get("source_revision_config")
            or {}, secrets=data.get("secrets"), idempotency_key=request.headers.get("Idempotency-Key"))
        return deployment_response(result.deployment, status=201)


class DeploymentDetailApi(APIView):
    required_permission = READ

    @extend_schema(responses={200: s.DeploymentOutput, **NOT_FOUND}, operation_id="get_deployment")
    def get(self, request, deployment_id):
        return deployment_response(deployment_from_path(request, deployment_id))


class DeploymentUpdateApi(APIView):
    required_permission = MANAGE
    throttle_scope = "deployment-write"

    @extend_schema(request=s.DeploymentPatchInput,
                   responses={200: s.DeploymentOutput, 400: None, 409: None, **NOT_FOUND},
                   operation_id="patch_deployment")
    def patch(self, request, deployment_id):
        deployment = deployment_from_path(request, deployment_id)
        serializer = s.DeploymentPatchInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        updated = services.deployment_update(deployment=deployment, data=_plain(serializer.validated_data))
        return deployment_response(updated)


class DeploymentDeleteApi(APIView):
    required_permission = MANAGE
    throttle_scope = "deployment-write"

    @extend_schema(responses={204: None, **NOT_FOUND}, operation_id="delete_deployment")
    def delete(self, request, deployment_id):
        services.deployment_delete(deployment=deployment_from_path(request, deployment_id))
        return Response(status=204)


class RevisionListApi(APIView):
    required_permission = READ

    @extend_schema(parameters=[s.RevisionListQuery], responses={200: s.RevisionsListOutput, **NOT_FOUND},
                   operation_id="list_revisions")
    def get(self, request, deployment_id):
        deployment = deployment_from_path(request, deployment_id)
        query = s.validate_query(s.RevisionListQuery, request.query_params)
        revisions = selectors.revision_list(deployment=deployment, statuses=query.get("status"))
        offset = query["offset"]
        page = list(revisions[offset: offset + query["limit"]])
        return Response(s.RevisionsListOutput({"resources": [revision_data(r) for r in page],
                                               "offset": offset + len(page)}).data)


class RevisionDetailApi(APIView):
    required_permission = READ

    @extend_schema(responses={200: s.RevisionOutput, **NOT_FOUND}, operation_id="get_revision")
    def get(self, request, deployment_id, revision_id):
        _, revision = revision_from_path(request, deployment_id, revision_id)
        return Response(s.RevisionOutput(revision_data(revision)).data)


class RevisionRedeployApi(APIView):
    required_permission = MANAGE
    throttle_scope = "deployment-write"

    @extend_schema(request=None, responses={200: s.DeploymentOutput, 400: None, 409: None, **NOT_FOUND},
                   operation_id="redeploy_revision")
    def post(self, request, deployment_id, revision_id):
        deployment, revision = revision_from_path(request, deployment_id, revision_id)
        return deployment_response(services.revision_redeploy(deployment=deployment, revision=revision))


class RevisionInterruptApi(APIView):
    required_permission = MANAGE
    throttle_scope = "deployment-write"

    @extend_schema(request=None, responses={200: s.RevisionOutput, 400: None, **NOT_FOUND},
                   operation_id="interrupt_revision")
    def post(self, request, deployment_id, revision_id):
        _, revision = revision_from_path(request, deployment_id, revision_id)
        revision = services.revision_interrupt(revision=revision)
        return Response(s.RevisionOutput(revision_data(revision)).data)
