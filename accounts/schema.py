"""How API-key authentication appears in the OpenAPI schema.

`X-Tenant-Id` is not a second scheme: it is optional (a key with one workspace acts in it), so
`core.openapi_generation` declares it as an optional header parameter of every authenticated operation.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "X-Api-Key"}
