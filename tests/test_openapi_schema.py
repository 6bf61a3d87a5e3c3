"""The OpenAPI schema states what the server does (issue 13); tests/test_schema_fuzz.py checks it live."""

from __future__ import annotations

import pytest
from django.http import QueryDict
from drf_spectacular.settings import spectacular_settings

from deployments.serializers import LogParamsSerializer

PUBLIC = {("get", "/info"), ("get", "/api/v1/info"), ("get", "/v2/auth/start/{auth_id}"),
          ("get", "/v2/auth/callback/{provider_id}"), ("put", "/v2/deployments/uploads/{object_path}")}


@pytest.fixture(scope="module")
def schema():
    return spectacular_settings.DEFAULT_GENERATOR_CLASS().get_schema(request=None, public=True)


def operations(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            yield method, path, operation


def test_every_operation_but_the_public_ones_needs_an_api_key_and_documents_401_and_403(schema):
    public = set()
    for method, path, operation in operations(schema):
        if operation["security"] == []:
            public.add((method, path))
            continue
        assert operation["security"] == [{"ApiKey": []}], (method, path)
        assert {"401", "403", "422"} <= set(operation["responses"]), (method, path)
        assert operation["responses"]["401"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorDetail"}
    assert public == PUBLIC


def test_swagger_ui_groups_the_operations_by_resource_not_by_path_segment(schema):
    tags = {(method, path): operation["tags"] for method, path, operation in operations(schema)}
    assert {tag for names in tags.values() for tag in names} == {tag["name"] for tag in schema["tags"]} == {
        "Deployments", "Revisions", "Bulk export destinations", "Bulk exports", "Tracing projects", "Traces", "OAuth",
        "Workspaces"}
    assert all(len(names) == 1 for names in tags.values()), tags
    assert tags[("post", "/v2/deployments")] == tags[("put", "/v2/deployments/uploads/{object_path}")] == [
        "Deployments"]
    assert tags[("get", "/v2/deployments/{deployment_id}/revisions/{revision_id}/logs")] == ["Revisions"]
    assert tags[("post", "/api/v1/bulk-exports/destinations")] == ["Bulk export destinations"]
    assert tags[("get", "/api/v1/bulk-exports/runs")] == ["Bulk exports"]
    assert tags[("post", "/runs/multipart")] == tags[("post", "/api/v1/runs/batch")] == ["Traces"]
    assert tags[("get", "/v2/auth/callback/{provider_id}")] == tags[("delete", "/v2/auth/tokens")] == ["OAuth"]
    assert tags[("get", "/api/v1/workspaces/current")] == ["Workspaces"]


def test_the_rest_reference_and_the_agent_server_reference_have_their_own_titles_and_link_each_other(schema):
    from agentserver.openapi_document import agent_server_document

    agent_server = agent_server_document()["info"]
    assert schema["info"]["title"] != agent_server["title"] == "Agent Server API"
    assert "[/api/docs](/api/docs)" in schema["info"]["description"]
    assert "[/api/reference/](/api/reference/)" in agent_server["description"]


def test_x_tenant_id_is_an_optional_uuid_header_everywhere(schema):
    for method, path, operation in operations(schema):
        if (method, path) in PUBLIC:
            continue
        [tenant] = [p for p in operation["parameters"] if p["name"] == "X-Tenant-Id"]
        assert tenant["in"] == "header" and tenant["required"] is False and tenant["schema"]["format"] == "uuid"


def test_validation_errors_are_documented_with_integer_or_string_locations(schema):
    item = schema["components"]["schemas"]["ValidationErrorItem"]
    assert item["properties"]["loc"]["items"] == {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    for method, path in [("post", "/runs/batch"), ("post", "/api/v1/bulk-exports"),
                         ("post", "/api/v1/bulk-exports/destinations"), ("get", "/api/v1/sessions")]:
        response = schema["paths"][path][method]["responses"]["422"]
        assert response["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/HTTPValidationError"}


def test_bodies_document_413_and_415_and_multipart_needs_its_body(schema):
    for method, path, operation in operations(schema):
        if "requestBody" in operation:
            assert {"413", "415"} <= set(operation["responses"]), (method, path)
    multipart = schema["paths"]["/runs/multipart"]["post"]
    assert multipart["requestBody"]["required"] is True and "multipart/form-data" in multipart["requestBody"]["content"]


def test_creating_a_workspace_is_201_and_a_deployment_patch_may_be_409(schema):
    assert set(schema["paths"]["/api/v1/workspaces"]["post"]["responses"]) >= {"201", "409"}
    assert "200" not in schema["paths"]["/api/v1/workspaces"]["post"]["responses"]
    assert "409" in schema["paths"]["/v2/deployments/{deployment_id}"]["patch"]["responses"]


def test_the_ci_operations_of_the_control_plane_are_declared_with_their_status_codes(schema):
    create = schema["paths"]["/v2/deployments/{deployment_id}/revisions"]["post"]
    assert {"201", "400", "404", "409", "422"} <= set(create["responses"]) and "200" not in create["responses"]
    assert create["responses"]["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/RevisionOutput"}
    bulk = schema["paths"]["/v2/deployments"]["delete"]
    assert {"200", "207", "404", "422"} <= set(bulk["responses"])
    [ids] = [p for p in bulk["parameters"] if p["name"] == "deployment_ids"]
    assert ids["in"] == "query" and ids["required"] is True
    assert ids["schema"] == {"type": "array", "items": {"type": "string", "format": "uuid"}, "minItems": 1,
                             "maxItems": 100}
    delete = schema["paths"]["/v2/deployments/{deployment_id}"]["delete"]
    options = {p["name"]: p for p in delete["parameters"] if p["in"] == "query"}
    assert {name: p["schema"] for name, p in options.items()} == {
        "delete_tracing_project": {"type": "boolean", "default": False}, "force": {"type": "boolean", "default": False}}
    assert {"204", "400", "404"} <= set(delete["responses"])


def test_a_revision_says_why_it_failed(schema):
    revision = schema["components"]["schemas"]["RevisionOutput"]
    assert revision["properties"]["status_message"]["type"] == "string"
    assert revision["properties"]["status_message"]["nullable"] is True and "status_message" in revision["required"]


def test_ids_in_paths_are_uuids(schema):
    for path in ["/v2/deployments/{deployment_id}/revisions/{revision_id}", "/api/v1/sessions/{session_id}",
                 "/v1/projects/{project_id}/deploy_logs", "/api/v1/bulk-exports/{bulk_export_id}"]:
        for method, operation in schema["paths"][path].items():
            for parameter in operation["parameters"]:
                if parameter["in"] == "path":
                    assert parameter["schema"]["format"] == "uuid", (method, path, parameter)


def test_limits_text_and_unknown_keys_are_declared(schema):
    params = {p["name"]: p["schema"] for p in schema["paths"]["/api/v1/sessions"]["get"]["parameters"]}
    assert (params["limit"]["minimum"], params["limit"]["maximum"]) == (1, 100)
    create = schema["components"]["schemas"]["BulkExportDestinationCreateRequest"]
    assert create["properties"]["config"]["$ref"]
    config = schema["components"]["schemas"]["BulkExportDestinationS3ConfigRequest"]
    assert config["additionalProperties"] is False
    provider = schema["components"]["schemas"]["OAuthProviderCreateRequest"]["properties"]["name"]
    assert provider["minLength"] == 1 and provider["pattern"] == r"^(?!\s*$)[^\x00]*$"


def test_a_json_number_for_a_text_field_is_a_422_not_its_text(api_client):
    response = api_client.post("/api/v1/workspaces", {"name": 123}, format="json")
    assert response.status_code == 422
    assert response.json()["detail"] == [{"loc": ["body", "name"], "msg": "Input should be a valid string",
                                          "type": "string_type"}]


@pytest.mark.parametrize("value", [False, True, -1, "-5", "1e3"])
def test_a_log_time_is_a_date_time_or_non_negative_epoch_milliseconds(value):
    assert not LogParamsSerializer(data={"end_time": value}).is_valid()
    assert LogParamsSerializer(data={"end_time": 0}).is_valid()
    assert LogParamsSerializer(data={"end_time": "1.0"}).is_valid()
    assert LogParamsSerializer(data={"end_time": "2026-01-01T00:00:00Z"}).is_valid()


def test_an_empty_log_query_value_is_not_given(db):
    params = LogParamsSerializer(data=QueryDict("order=&limit=&level="))
    assert params.is_valid(), params.errors
    assert params.validated_data["order"] == "asc" and params.validated_data["limit"] == 50


def test_a_json_boolean_field_takes_only_true_or_false(api_client):
    response = api_client.post("/v2/auth/providers", {
        "provider_id": "idp", "name": "IdP", "client_id": "abc", "client_secret": "s",
        "auth_url": "https://idp.example.com/authorize", "token_url": "https://idp.example.com/token",
        "uses_pkce": 1}, format="json")
    assert response.status_code == 422
    assert response.json()["detail"] == [{"loc": ["body", "uses_pkce"], "msg": "Input should be a valid boolean",
                                          "type": "bool_type"}]
