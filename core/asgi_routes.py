"""Routes to ASGI applications (Channels consumers, Django's ASGI handler) for Channels' `URLRouter`.

Channels matches its routes with Django's `re_path`, which django-stubs types for views only: this is the one place
that tells the type checker a route may lead to an ASGI application too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from django.urls import re_path

if TYPE_CHECKING:
    from channels.routing import _ExtendedURLPattern

ASGIApp = Callable[[Any, Any, Any], Awaitable[Any]]


def asgi_route(route: str, application: ASGIApp) -> _ExtendedURLPattern:
    """`re_path(route, application)`, for an ASGI application."""
    return re_path(route, application)  # type: ignore[arg-type,return-value]  # see the module docstring
