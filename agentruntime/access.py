"""Who is calling a chat route, which threads are theirs, and whether a cookie-authenticated write is same-origin.

| caller | owner of the threads it creates |
|---|---|
| API key with `chat:use` (`X-Api-Key`, plus `X-Tenant-Id` by the foundation's rules) | the key's workspace |
| logged-in user (Django session cookie, resolved by Django's or Channels' auth middleware) | that user |
| anonymous, only with CHAT_ALLOW_ANONYMOUS | one shared anonymous owner |
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.exceptions import PermissionDenied as DrfPermissionDenied

from accounts.authentication import principal_from_headers
from core.exceptions import RequestValidationError


class ChatAccessError(Exception):
    """A request refused before it reaches a thread: `status` and `code` are the protocol's."""

    def __init__(self, status: int, code: str, message: str):
        self.status, self.code, self.message = status, code, message
        super().__init__(message)


def unauthenticated(message: str) -> ChatAccessError:
    return ChatAccessError(401, "unauthenticated", message)


def permission_denied(message: str) -> ChatAccessError:
    return ChatAccessError(403, "permission_denied", message)


def owner_scope(kind: str, workspace_id: object = None, user_id: object = None) -> str:
    """The scope of a chat owner's LangGraph store (agentruntime/store/django_store.py): one store per workspace, user,
    or the anonymous owner."""
    if kind == "workspace":
        return f"workspace:{workspace_id}"
    if kind == "user":
        return f"user:{user_id}"
    return "anonymous"


@dataclass(frozen=True)
class Caller:
    kind: str  # ChatThread.OwnerKind value
    workspace: object | None = None
    user: object | None = None
    via_cookie: bool = False
    # Who counts against CHAT_MAX_STREAMS: the API key, the user, or an anonymous client address.
    stream_key: str = ""

    @property
    def owner_fields(self) -> dict:
        return {"owner_kind": self.kind, "workspace": self.workspace, "user": self.user}

    @property
    def store_scope(self) -> str:
        """The scope of the caller's LangGraph store: the one its runs' graphs get."""
        return owner_scope(self.kind, getattr(self.workspace, "id", None), getattr(self.user, "pk", None))

    @property
    def owner_filter(self) -> dict:
        return {"owner_kind": self.kind,
                "workspace_id": getattr(self.workspace, "id", None),
                "user_id": getattr(self.user, "pk", None)}


def authorize(*, headers: dict[str, str], client_host: str, user, write: bool,
              cross_origin_write_ok: bool = False) -> Caller:
    """The caller of a chat route or an Agent Server view, with a write's origin checked; the one check both run.

    `user` is the session's user as Django's or Channels' auth middleware resolved it (None or anonymous without
    one). `cross_origin_write_ok`: a CORS origin the Agent Server API allows may write without a same-site
    Origin, unless the caller authenticated with the user's cookies. Runs ORM queries: call it off the event loop.

    Raises:
        ChatAccessError: 400, 401 or 403 (see resolve_caller and check_write_origin).
    """
    caller = resolve_caller(headers, client_host, user)
    if write and not (cross_origin_write_ok and not caller.via_cookie):
        check_write_origin(caller, headers)
    return caller


def resolve_caller(headers: dict[str, str], client_host: str = "", user=None) -> Caller:
    """The caller behind a request's headers (lower-case names) and session user. Runs ORM queries.

    Raises:
        ChatAccessError: 401 unauthenticated, or 403 permission_denied (key without chat:use, ambiguous workspace).
    """
    try:
        principal = principal_from_headers(headers.get("x-api-key"), headers.get("x-tenant-id"))
    except AuthenticationFailed as exc:
        raise unauthenticated(str(exc.detail)) from None
    except DrfPermissionDenied as exc:  # X-Tenant-Id names a workspace the key may not use
        raise permission_denied(str(exc.detail)) from None
    except RequestValidationError as exc:
        raise ChatAccessError(400, "invalid_argument", f"X-Tenant-Id: {exc.errors[0]['msg']}") from None
    if principal is not None:
        if not principal.has_permission("chat:use"):
            raise permission_denied("This API key lacks the chat:use permission.")
        try:
            workspace = principal.workspace
        except DrfPermissionDenied as exc:
            raise permission_denied(str(exc.detail)) from None
        return Caller(kind="workspace", workspace=workspace, stream_key=f"key:{principal.api_key.id}")
    # Evaluated only here: an API-key request never loads the session (Django's request.user is lazy).
    if user is not None and user.is_authenticated and user.is_active:
        return Caller(kind="user", user=user, via_cookie=True, stream_key=f"user:{user.pk}")
    if settings.CHAT_ALLOW_ANONYMOUS:
        return Caller(kind="anonymous", stream_key=f"anonymous:{client_host}")
    raise unauthenticated("Authentication required: send X-Api-Key (with the chat:use permission) or log in.")


def check_write_origin(caller: Caller, headers: dict[str, str]) -> None:
    """Refuse cross-site writes: a cookie-authenticated write must name our origin (Origin, else Referer).

    A browser page elsewhere can send the user's cookies but cannot forge these headers. Callers without cookies
    (API keys, anonymous scripts) send neither; a browser that does send a foreign Origin is refused too.

    Raises:
        ChatAccessError: 403 permission_denied.
    """
    origin = headers.get("origin")
    if origin is None and headers.get("referer"):
        parts = urlsplit(headers["referer"])
        origin = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else "null"
    if origin is None:
        if caller.via_cookie:
            raise permission_denied("Cookie-authenticated writes must come from this site (Origin or Referer).")
        return
    if origin not in allowed_origins(headers.get("host", "")):
        raise permission_denied(f"Cross-origin request refused: {origin} is not this site's origin.")


def allowed_origins(host: str) -> set[str]:
    public = urlsplit(settings.PUBLIC_BASE_URL)
    origins = {f"{public.scheme}://{public.netloc}", *settings.CSRF_TRUSTED_ORIGINS}
    # The host the request was sent to, when it is one of ours (the same page served on 127.0.0.1 or localhost).
    hostname = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
    if host and (hostname in settings.ALLOWED_HOSTS or "*" in settings.ALLOWED_HOSTS):
        origins |= {f"http://{host}", f"https://{host}"}
    return origins
