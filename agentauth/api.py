"""Auth Service (v2) REST API: providers, authenticate, wait and token revocation (`auth:manage`)."""

from __future__ import annotations

import logging

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from agentauth import selectors, services
from agentauth.models import OAuthProvider
from core.exceptions import RequestValidationError, ServiceError
from core.fields import UndecryptableValue
from core.openapi_generation import ErrorDetailSerializer as ErrorSerializer
from core.openapi_generation import HTTPValidationErrorSerializer
from core.rest_errors import validation_item
from core.serializers import validated, validated_query

log = logging.getLogger("agentauth")

PROVIDER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
# RFC 6749 §3.3: a scope token is visible ASCII without space, '"' or '\'.
SCOPE_PATTERN = r"^[\x21\x23-\x5B\x5D-\x7E]{1,255}$"
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def answers(ok, *errors: int) -> dict:
    """An operation's documented answers: `ok` for 200, and the error body of each status in `errors` (422 is the
    validation error's)."""
    return {200: ok, **{status: HTTPValidationErrorSerializer if status == 422 else ErrorSerializer
                        for status in errors}}


def validate_query(serializer_class, request) -> dict:
    """Validate query parameters; errors are 422 located at ["query", name]. Repeated parameters are refused."""
    repeated = [name for name in serializer_class().fields if len(request.query_params.getlist(name)) > 1]
    if repeated:
        raise RequestValidationError([validation_item(["query", name], "Give this parameter once.",
                                                      "value_error") for name in repeated])
    return validated_query(serializer_class, request.query_params)


UNREADABLE = ("A stored OAuth secret cannot be decrypted: FIELD_ENCRYPTION_KEY does not hold the key it was "
              "encrypted with.")


class CredentialsUnreadable(ServiceError, status=503, detail=UNREADABLE): ...


class AuthApiView(APIView):
    """Every Auth Service endpoint needs `auth:manage`; an undecryptable secret is a clear 503, not a 500."""

    required_permission = "auth:manage"

    def handle_exception(self, exc):
        if isinstance(exc, UndecryptableValue):
            log.error("%s", exc)  # names the model and field, never a value
            exc = CredentialsUnreadable()
        return super().handle_exception(exc)


class ProviderOutputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "OAuthProviderResponse"

    id = serializers.UUIDField()
    organization_id = serializers.UUIDField(source="workspace_id", help_text="The workspace (tenant) id.")
    provider_id = serializers.CharField()
    name = serializers.CharField()
    client_id = serializers.CharField()
    auth_url = serializers.CharField()
    token_url = serializers.CharField()
    uses_pkce = serializers.BooleanField()
    code_challenge_method = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class ProviderFieldsSerializer(serializers.Serializer):
    """The provider's writable fields; client_secret is write-only and never serialized back."""

    name = serializers.CharField(max_length=255)
    client_id = serializers.CharField(max_length=512)
    client_secret = serializers.CharField(max_length=4096, allow_blank=True, write_only=True, trim_whitespace=False,
                                          help_text="Write-only; stored encrypted. Empty for a public (PKCE) client.")
    auth_url = serializers.URLField(max_length=2048)
    token_url = serializers.URLField(max_length=2048)
    uses_pkce = serializers.BooleanField(default=False)
    code_challenge_method = serializers.ChoiceField(choices=OAuthProvider.ChallengeMethod.choices, default="S256")


class ProviderApi(AuthApiView):
    # No docstring: drf-spectacular would describe every provider operation with it.
    OutputSerializer = ProviderOutputSerializer

    def provider(self, request, provider_id: str) -> OAuthProvider:
        return selectors.provider_get(workspace=request.user.workspace, provider_id=provider_id)


class ProviderListApi(ProviderApi):
    @extend_schema(responses=ProviderOutputSerializer(many=True), operation_id="list_oauth_providers")
    def get(self, request):
        providers = selectors.provider_list(workspace=request.user.workspace)
        return Response(self.OutputSerializer(providers, many=True).data)


class ProviderCreateApi(ProviderApi):

    class InputSerializer(ProviderFieldsSerializer):
        provider_id = serializers.RegexField(PROVIDER_ID_PATTERN, max_length=64)

        class Meta:
            ref_name = "OAuthProviderCreate"

    @extend_schema(request=InputSerializer, operation_id="create_oauth_provider",
                   responses=answers(ProviderOutputSerializer, 400, 409, 422))
    def post(self, request):
        provider = services.provider_create(workspace=request.user.workspace,
                                            **validated(self.InputSerializer, request.data))
        return Response(self.OutputSerializer(provider).data)


class ProviderDetailApi(ProviderApi):
    @extend_schema(operation_id="get_oauth_provider", responses=answers(ProviderOutputSerializer, 404))
    def get(self, request, provider_id):
        return Response(self.OutputSerializer(self.provider(request, provider_id)).data)


class ProviderUpdateApi(ProviderApi):

    class InputSerializer(ProviderFieldsSerializer):
        class Meta:
            ref_name = "OAuthProviderUpdate"

        def __init__(self, *args, **kwargs):
            super().__init__(*args, partial=True, **kwargs)

    @extend_schema(request=InputSerializer, operation_id="update_oauth_provider",
                   responses=answers(ProviderOutputSerializer, 400, 404, 422))
    def patch(self, request, provider_id):
        provider = self.provider(request, provider_id)
        values = validated(self.InputSerializer, request.data)
        provider = services.provider_update(provider=provider, **values)
        return Response(self.OutputSerializer(provider).data)


class ProviderDeleteApi(ProviderApi):

    @extend_schema(operation_id="delete_oauth_provider", responses=answers(
        OpenApiResponse(description="Deleted, with its flows and stored tokens."), 404))
    def delete(self, request, provider_id):
        services.provider_delete(provider=self.provider(request, provider_id))
        return Response({})


class AuthenticateApi(AuthApiView):
    throttle_scope = "auth-flow"

    class InputSerializer(serializers.Serializer):
        user_id = serializers.CharField(max_length=255)
        # A provider's id is looked up as given: white space is not trimmed into a blank (422) but not found (404).
        provider = serializers.CharField(max_length=64, trim_whitespace=False)
        scopes = serializers.ListField(child=serializers.RegexField(SCOPE_PATTERN), max_length=100)
        agent_id = serializers.CharField(max_length=255, required=False, allow_null=True, allow_blank=True)

        class Meta:
            ref_name = "AuthAuthenticate"

    class OutputSerializer(serializers.Serializer):
        status = serializers.ChoiceField(choices=["completed", "pending"])
        url = serializers.CharField(allow_null=True, help_text="Open in the user's browser (pending only).")
        auth_id = serializers.CharField(allow_null=True, help_text="Pass to wait (pending only).")
        token = serializers.CharField(allow_null=True, help_text="The access token (completed only).")

        class Meta:
            ref_name = "AuthAuthenticateResponse"

    @extend_schema(request=InputSerializer, operation_id="authenticate",
                   responses=answers(OutputSerializer, 404, 422, 502))
    def post(self, request):
        values = validated(self.InputSerializer, request.data)
        result = services.auth_authenticate(workspace=request.user.workspace, user_id=values["user_id"],
                                            provider_id=values["provider"], scopes=values["scopes"],
                                            agent_id=values.get("agent_id"))
        return Response(self.OutputSerializer(result).data, headers=NO_STORE)


class AuthWaitApi(AuthApiView):
    throttle_scope = "auth-flow"

    class QuerySerializer(serializers.Serializer):
        timeout = serializers.IntegerField(min_value=0, default=300, required=False,
                                           help_text="Seconds to wait (default 300; values above 300 wait 300).")

    class OutputSerializer(serializers.Serializer):
        status = serializers.ChoiceField(choices=["completed", "pending", "timeout", "not_found"])
        token = serializers.CharField(allow_null=True)

        class Meta:
            ref_name = "AuthWaitResponse"

    @extend_schema(parameters=[QuerySerializer], operation_id="wait_for_auth_completion",
                   responses=answers(OutputSerializer, 422))
    def get(self, request, auth_id):
        timeout = validate_query(self.QuerySerializer, request)["timeout"]
        result = selectors.flow_wait(workspace=request.user.workspace, auth_id=auth_id, timeout=timeout)
        return Response(self.OutputSerializer(result).data, headers=NO_STORE)


class TokensRevokeApi(AuthApiView):

    class QuerySerializer(serializers.Serializer):
        user_id = serializers.CharField(max_length=255)
        provider = serializers.CharField(max_length=64, help_text="The provider_id whose tokens to delete.")

    class OutputSerializer(serializers.Serializer):
        deleted = serializers.IntegerField(help_text="How many stored tokens were deleted (across agents).")

        class Meta:
            ref_name = "AuthTokensDeleteResponse"

    @extend_schema(parameters=[QuerySerializer], operation_id="delete_oauth_tokens",
                   responses=answers(OutputSerializer, 404, 422))
    def delete(self, request):
        values = validate_query(self.QuerySerializer, request)
        deleted = services.tokens_revoke(workspace=request.user.workspace, user_id=values["user_id"],
                                         provider_id=values["provider"])
        return Response(self.OutputSerializer({"deleted": deleted}).data)
