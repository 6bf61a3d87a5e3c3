"""The /v2 deployments API: one view per operation (validate, call a service or selector, serialize)."""

from __future__ import annotations

import json
import uuid

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from core.exceptions import NotFound
from core.pagination import limit_field, offset_field
from core.serializers import QueryBooleanField, validated, validated_query
from deployments import selectors, services
from deployments.models import Deployment, Revision
from deployments.serializers import (
    DEPLOYMENT_TYPES,
    DeploymentNameField,
    DeploymentOutputSerializer,
    RevisionOutputSerializer,
    RevisionStatusListField,
    SourceConfigInputSerializer,
    SourceRevisionConfigInputSerializer,
    UuidListField,
    UuidQueryListField,
    parse_path_uuid,
    secrets_input,
)
from deployments.states import RevisionStatus

READ, MANAGE = "deployments:read", "deployments:manage"
NOT_FOUND = {404: None, 422: None}
NOT_A_REVISION_FIELD = "Not taken here: anything but null is a 400. PATCH the deployment to change it."


def _plain(data) -> dict:
    """Validated data as plain JSON values (UUIDs as strings), as it is stored and compared."""
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def _page(items: QuerySet, *, offset: int, limit: int) -> dict:
    """One page of a list and the offset of the next one, in the control plane's list shape."""
    page = list(items[offset: offset + limit])
    return {"resources": page, "offset": offset + len(page)}


def deployment_from_path(request, deployment_id: str) -> Deployment:
    return selectors.deployment_get(workspace=request.user.workspace,
                                    deployment_id=parse_path_uuid(deployment_id, "deployment_id"))


def revision_from_path(request, deployment_id: str, revision_id: str) -> tuple[Deployment, Revision]:
    deployment = deployment_from_path(request, deployment_id)
    revision = selectors.revision_get(deployment=deployment, revision_id=parse_path_uuid(revision_id, "revision_id"))
    return deployment, revision


class DeploymentListApi(APIView):
    required_permission = READ

    class FilterSerializer(serializers.Serializer):
        limit = limit_field(default=20, maximum=100)
        offset = offset_field()
        name = serializers.CharField(required=False, allow_blank=True)
        name_contains = serializers.CharField(required=False, allow_blank=True)
        status = serializers.ChoiceField(Deployment.Status.values, required=False)
        deployment_type = serializers.ChoiceField(DEPLOYMENT_TYPES, required=False)
        deployment_ids = UuidListField(required=False, allow_blank=True)

        def validate_deployment_ids(self, value):
            try:
                return [uuid.UUID(part.strip()) for part in value.split(",") if part.strip()]
            except ValueError:
                raise serializers.ValidationError("Input should be a comma-separated list of UUIDs.") from None

    class OutputSerializer(serializers.Serializer):
        resources = DeploymentOutputSerializer(many=True)
        offset = serializers.IntegerField()

        class Meta:
            ref_name = "DeploymentsListOutput"

    @extend_schema(parameters=[FilterSerializer], responses={200: OutputSerializer, 422: None},
                   operation_id="list_deployments")
    def get(self, request):
        filters = validated_query(self.FilterSerializer, request.query_params)
        deployments = selectors.deployment_list(
            workspace=request.user.workspace, name=filters.get("name"), name_contains=filters.get("name_contains"),
            status=filters.get("status"), deployment_type=filters.get("deployment_type"),
            deployment_ids=filters.get("deployment_ids"))
        page = _page(deployments, offset=filters["offset"], limit=filters["limit"])
        return Response(self.OutputSerializer(page).data)


class DeploymentCreateApi(APIView):
    required_permission = MANAGE
    throttle_scope = "deployment-write"

    class InputSerializer(serializers.Serializer):
        name = DeploymentNameField(max_length=128)
        # DRF's metaclass takes declared fields off the class (the stubs see a clash with Field.source).
        source = serializers.ChoiceField(Deployment.Source.choices)  # type: ignore[assignment]
        source_config = SourceConfigInputSerializer(required=False, allow_null=True)
        source_revision_config = SourceRevisionConfigInputSerializer(required=False, allow_null=True)
        secrets = secrets_input()

        class Meta:
            ref_name = "DeploymentCreateInput"

        def validate_name(self, value):
            if any(ord(c) < 32 for c in value) or value != value.strip():
                raise serializers.ValidationError("Input should be a name without control characters or edge "
                                                  "spaces.")
            return value

    OutputSerializer = DeploymentOutputSerializer

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, 400: None, 409: None, 422: None},
                   parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=False)],
                   operation_id="create_deployment")
    def post(self, request):
        data = _plain(validated(self.InputSerializer, request.data))
        result = services.deployment_create(
            workspace=request.user.workspace, name=data["name"], source=data["source"],
            source_config=data.get("source_config") or {}, source_revision_config=data.get("source_revision_config")
            or {}, secrets=data.get("secrets"), idempotency_key=request.headers.get("Idempotency-Key"))
        return Response(self.OutputSerializer(result.deployment).data, status=201)


class DeploymentDetailApi(APIView):
    required_permission = READ

    OutputSerializer = DeploymentOutputSerializer

    @extend_schema(responses={200: OutputSerializer, **NOT_FOUND}, operation_id="get_deployment")
    def get(self, request, deployment_id):
        return Response(self.OutputSerializer(deployment_from_path(request, deployment_id)).data)


class DeploymentUpdateApi(APIView):
    required_permission = MANAGE
    throttle_scope = "deployment-write"

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=128, required=False, allow_null=True)
        # DRF's metaclass takes declared fields off the class (the stubs see a clash with Field.source).
        source = serializers.ChoiceField(  # type: ignore[assignment]
            Deployment.Source.choices, required=False, allow_null=True)
        source_config = SourceConfigInputSerializer(required=False, allow_null=True)
        source_revision_config = SourceRevisionConfigInputSerializer(required=False, allow_null=True)
        secrets = secrets_input()
        revision_source = serializers.ChoiceField(Deployment.Source.choices, required=False, allow_null=True)
        tracked_packages = serializers.ListField(child=serializers.CharField(max_length=255), required=False,
                                                 allow_null=True, max_length=100)

        class Meta:
            ref_name = "DeploymentPatchInput"

    OutputSerializer = DeploymentOutputSerializer

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, 400: None, 409: None, **NOT_FOUND},
                   operation_id="patch_deployment")
    def patch(self, request, deployment_id):
        deployment = deployment_from_path(request, deployment_id)
        data = _plain(validated(self.InputSerializer, request.data))
        updated = services.deployment_update(deployment=deployment, data=data)
        return Response(self.OutputSerializer(updated).data)


class DeploymentDeleteApi(APIView):
    required_permission = MANAGE
    throttle_scope = "deployment-write"

    class FilterSerializer(serializers.Serializer):
        delete_tracing_project = QueryBooleanField(
            default=False, help_text="Also delete the deployment's tracing project and its runs.")
        force = QueryBooleanField(
            default=False, help_text="Tear down at once a deployment already deleted (status AWAITING_DELETE); on "
            "any other deployment, 400.")

    @extend_schema(parameters=[FilterSerializer], responses={204: None, 400: None, **NOT_FOUND},
                   operation_id="delete_deployment")
    def delete(self, request, deployment_id):
        deployment = deployment_from_path(request, deployment_id)
        options = validated_query(self.FilterSerializer, request.query_params)
        services.deployment_delete(deployment=deployment, delete_tracing_project=options["delete_tracing_project"],
                                   force=options["force"])
        return Response(status=204)


class DeploymentBulkDeleteApi(APIView):
    required_permission = MANAGE
    throttle_scope = "deployment-write"

    class FilterSerializer(serializers.Serializer):
        deployment_ids = UuidQueryListField(max_length=100)

    class OutputSerializer(serializers.Serializer):
        class ErrorSerializer(serializers.Serializer):
            deployment_id = serializers.UUIDField()
            detail = serializers.CharField()

            class Meta:
                ref_name = "DeploymentsDeleteError"

        deleted = serializers.ListField(child=serializers.UUIDField())
        # DRF's metaclass takes declared fields off the class (the stubs see a clash with Serializer.errors).
        errors = ErrorSerializer(many=True)  # type: ignore[assignment]

        class Meta:
            ref_name = "DeploymentsDeleteOutput"

    @extend_schema(parameters=[FilterSerializer], responses={200: OutputSerializer, 207: OutputSerializer, 404: None,
                                                             422: None},
                   operation_id="delete_deployments")
    def delete(self, request):
        ids = validated_query(self.FilterSerializer, request.query_params)["deployment_ids"]
        result = services.deployment_delete_many(workspace=request.user.workspace, deployment_ids=ids)
        if not result.deleted:
            raise NotFound(result.errors[0]["detail"] if len(result.errors) == 1 else
                           f"Deployment IDs {', '.join(str(e['deployment_id']) for e in result.errors)} not found.")
        body = self.OutputSerializer(result).data
        return Response(body, status=207 if result.errors else 200)


class RevisionListApi(APIView):
    required_permission = READ

    class FilterSerializer(serializers.Serializer):
        limit = limit_field(default=20, maximum=100)
        offset = offset_field()
        status = RevisionStatusListField(required=False, allow_blank=True)

        def validate_status(self, value):
            statuses = [part.strip() for part in value.split(",") if part.strip()]
            if any(status not in RevisionStatus.values for status in statuses):
                raise serializers.ValidationError(f"Input should be one of {', '.join(RevisionStatus.values)}.")
            return statuses

    class OutputSerializer(serializers.Serializer):
        resources = RevisionOutputSerializer(many=True)
        offset = serializers.IntegerField()

        class Meta:
            ref_name = "RevisionsListOutput"

    @extend_schema(parameters=[FilterSerializer], responses={200: OutputSerializer, **NOT_FOUND},
                   operation_id="list_revisions")
    def get(self, request, deployment_id):
        deployment = deployment_from_path(request, deployment_id)
        filters = validated_query(self.FilterSerializer, request.query_params)
        revisions = selectors.revision_list(deployment=deployment, statuses=filters.get("status"))
        page = _page(revisions, offset=filters["offset"], limit=filters["limit"])
        return Response(self.OutputSerializer(page).data)


class RevisionCreateApi(APIView):
    required_permission = MANAGE
    throttle_scope = "deployment-write"

    class InputSerializer(serializers.Serializer):
        source_revision_config = SourceRevisionConfigInputSerializer(required=False, allow_null=True)
        revision_source = serializers.ChoiceField(Deployment.Source.choices, required=False, allow_null=True)
        tracked_packages = serializers.ListField(child=serializers.CharField(max_length=255), required=False,
                                                 allow_null=True, max_length=100)
        # What a PATCH changes besides the source: refused here rather than ignored (services.revision_create).
        secrets = serializers.JSONField(required=False, allow_null=True, help_text=NOT_A_REVISION_FIELD)
        source_config = serializers.JSONField(required=False, allow_null=True, help_text=NOT_A_REVISION_FIELD)

        class Meta:
            ref_name = "RevisionCreateInput"

    OutputSerializer = RevisionOutputSerializer

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, 400: None, 409: None, **NOT_FOUND},
                   operation_id="create_revision")
    def post(self, request, deployment_id):
        deployment = deployment_from_path(request, deployment_id)
        data = _plain(validated(self.InputSerializer, request.data))
        revision = services.revision_create(deployment=deployment, data=data)
        return Response(self.OutputSerializer(revision).data, status=201)


class RevisionDetailApi(APIView):
    required_permission = READ

    OutputSerializer = RevisionOutputSerializer

    @extend_schema(responses={200: OutputSerializer, **NOT_FOUND}, operation_id="get_revision")
    def get(self, request, deployment_id, revision_id):
        _, revision = revision_from_path(request, deployment_id, revision_id)
        return Response(self.OutputSerializer(revision).data)


class RevisionRedeployApi(APIView):
    required_permission = MANAGE
    throttle_scope = "deployment-write"

    OutputSerializer = DeploymentOutputSerializer

    @extend_schema(request=None, responses={200: OutputSerializer, 400: None, 409: None, **NOT_FOUND},
                   operation_id="redeploy_revision")
    def post(self, request, deployment_id, revision_id):
        deployment, revision = revision_from_path(request, deployment_id, revision_id)
        redeployed = services.revision_redeploy(deployment=deployment, revision=revision)
        return Response(self.OutputSerializer(redeployed).data)


class RevisionInterruptApi(APIView):
    required_permission = MANAGE
    throttle_scope = "deployment-write"

    OutputSerializer = RevisionOutputSerializer

    @extend_schema(request=None, responses={200: OutputSerializer, 400: None, **NOT_FOUND},
                   operation_id="interrupt_revision")
    def post(self, request, deployment_id, revision_id):
        _, revision = revision_from_path(request, deployment_id, revision_id)
        return Response(self.OutputSerializer(services.revision_interrupt(revision=revision)).data)
