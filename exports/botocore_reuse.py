"""Building our S3 clients without rebuilding what is the same for every one of them.

For every client, botocore builds a new `ServiceModel` from S3's (cached) JSON model, a new client class with one
method per operation (resolving each operation's model again, for its docstring), and a new `EndpointProvider`,
which parses S3's whole endpoint rule set. None of it depends on the client's credentials, endpoint, region or
configuration: it is the service's description. Inside `reusing()` (only the S3 factory's own session uses it,
and it builds its clients under a lock), the three are built once per process and shared by the clients built
after; everything else (credentials, configuration, the event handlers, the HTTP session and its egress checks)
is built per client as before. Outside `reusing()`, botocore runs unchanged: any other session, boto3's default
one included, builds everything per client.

The rule set and the model are data; the endpoint provider keeps nothing per client but its cache of resolved
endpoints (keyed by every parameter that decides one: region, bucket, endpoint URL, addressing style, …), and
the client class holds only methods.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import botocore.client
import botocore.regions

_active: contextvars.ContextVar[_Shared | None] = contextvars.ContextVar("botocore_reuse", default=None)
_install_lock = threading.Lock()
_installed = False
_build_provider = botocore.regions.EndpointProvider


@dataclass
class _Shared:
    """What one botocore session's clients share (see the module docstring)."""

    service_models: dict[tuple, Any] = field(default_factory=dict)
    client_classes: dict[tuple, type] = field(default_factory=dict)
    # The key holds the ids of the rule set and partitions; the value keeps both alive, so the ids stay theirs.
    providers: dict[tuple, tuple[Any, Any, Any]] = field(default_factory=dict)


def shared() -> _Shared:
    """A new, empty set of shared parts: one per botocore session that uses `reusing()`."""
    return _Shared()


@contextlib.contextmanager
def reusing(parts: _Shared) -> Iterator[None]:
    """Clients created in this block (in this thread or task) share `parts`."""
    _install()
    token = _active.set(parts)
    try:
        yield
    finally:
        _active.reset(token)


def _install() -> None:
    global _installed
    with _install_lock:
        if _installed:
            return
        original_model = botocore.client.ClientCreator._load_service_model
        original_class = botocore.client.ClientCreator._create_client_class

        def load_service_model(self, service_name, api_version=None):
            parts = _active.get()
            if parts is None:
                return original_model(self, service_name, api_version)
            key = (service_name, api_version)
            if key not in parts.service_models:
                parts.service_models[key] = original_model(self, service_name, api_version)
            return parts.service_models[key]

        def create_client_class(self, service_name, service_model):
            parts = _active.get()
            if parts is None:
                return original_class(self, service_name, service_model)
            key = (service_name, id(service_model))  # the shared model: the same object every time
            if key not in parts.client_classes:
                parts.client_classes[key] = original_class(self, service_name, service_model)
            return parts.client_classes[key]

        botocore.client.ClientCreator._load_service_model = load_service_model
        botocore.client.ClientCreator._create_client_class = create_client_class
        botocore.regions.EndpointProvider = _endpoint_provider
        _installed = True


def _endpoint_provider(ruleset_data, partition_data, excluded_params=None):
    parts = _active.get()
    if parts is None:
        return _build_provider(ruleset_data=ruleset_data, partition_data=partition_data,
                               excluded_params=excluded_params)
    key = (id(ruleset_data), id(partition_data), tuple(excluded_params or ()))
    if key not in parts.providers:
        provider = _build_provider(ruleset_data=ruleset_data, partition_data=partition_data,
                                   excluded_params=excluded_params)
        parts.providers[key] = (provider, ruleset_data, partition_data)
    return parts.providers[key][0]
