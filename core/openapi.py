"""OpenAPI generation that understands `core.views.method_routes`."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver
from drf_spectacular.generators import EndpointEnumerator, SchemaGenerator


class MethodRoutesEnumerator(EndpointEnumerator):
    def _get_api_endpoints(self, patterns, prefix):
        if patterns is None:
            patterns = self.patterns
        endpoints = []
        for pattern in patterns:
            path_regex = prefix + str(pattern.pattern)
            callbacks = getattr(getattr(pattern, "callback", None), "method_callbacks", None)
            if isinstance(pattern, URLPattern) and callbacks:
                path = self.get_path_from_regex(path_regex)
                endpoints += [(path, path_regex, method, callback) for method, callback in callbacks.items()]
            elif isinstance(pattern, URLResolver):
                endpoints += self._get_api_endpoints(pattern.url_patterns, path_regex)
            else:
                endpoints += super()._get_api_endpoints([pattern], prefix)
        return endpoints


class ServiceSchemaGenerator(SchemaGenerator):
    endpoint_inspector_cls = MethodRoutesEnumerator
