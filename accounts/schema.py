"""How API-key authentication appears in the OpenAPI schema."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.ApiKeyAuthentication"
    name = ["ApiKey", "TenantId"]

    def get_security_definition(self, auto_schema):
        return [
            {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
            {"type": "apiKey", "in": "header", "name": "X-Tenant-Id",
             "description": "Workspace id; optional when the key has exactly one workspace."},
        ]
