"""The chat page at `/` and `/chat/`, and its sign-in pages.

The page is a template that loads the committed bundle (chat/static/chat/, built from frontend/); its script talks
to the chat API under /api/threads with LangChain's streaming client. With CHAT_ALLOW_ANONYMOUS off, visitors log in
first and each user sees only their own threads (the API scopes threads by the session's user).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.views import redirect_to_login
from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

DEFAULT_GRAPH = "chat.agent.graph:build_graph"
BUNDLE_FILES = ("chat/chat.js", "chat/chat.css")
# The page runs only its own bundle; model output can never bring script, frames or remote images along.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)

_versions: dict[tuple, str] = {}


def offline_model_in_use() -> bool:
    """Whether runs are answered by the offline scripted model: the default graph with CHAT_MODEL unset."""
    from agentruntime.selectors import served_spec

    return not settings.CHAT_MODEL.strip() and served_spec() == DEFAULT_GRAPH


def bundle_version() -> str:
    """A short digest of the bundle, appended to its URLs so a rebuilt bundle is never served from a stale cache."""
    paths = [Path(found) for name in BUNDLE_FILES if (found := finders.find(name))]
    key = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in paths)
    if key not in _versions:
        digest = hashlib.sha256()
        for path in paths:
            digest.update(path.read_bytes())
        _versions[key] = digest.hexdigest()[:12]
    return _versions[key]


def _secured(response: HttpResponse) -> HttpResponse:
    response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    return response


@require_GET
@never_cache
def chat_page(request: HttpRequest) -> HttpResponse:
    """The chat page; asks for a login first when anonymous chat is off."""
    if not settings.CHAT_ALLOW_ANONYMOUS and not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), login_url=reverse("chatpage:login"))
    user = request.user if request.user.is_authenticated else None
    page_config = {
        # Resolved against the page's own origin in the browser, which is what the API checks writes against.
        "apiUrl": "/api",
        "pagePath": request.path,
        "offlineModel": offline_model_in_use(),
        "username": user.get_username() if user else None,
        "allowAnonymous": settings.CHAT_ALLOW_ANONYMOUS,
        "loginUrl": reverse("chatpage:login"),
        "approveTools": list(settings.CHAT_APPROVE_TOOLS),
    }
    context = {"page_config": page_config, "offline_model": page_config["offlineModel"],
               "allow_anonymous": settings.CHAT_ALLOW_ANONYMOUS, "bundle_version": bundle_version()}
    return _secured(render(request, "chat/index.html", context))


@method_decorator(never_cache, name="dispatch")
class ChatLoginView(auth_views.LoginView):
    """Django's login, styled like the chat, returning to the chat (or to `next`)."""

    template_name = "chat/login.html"
    redirect_authenticated_user = True
    next_page = "chatpage:page"  # a URL name: resolve_url reverses it

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "bundle_version": bundle_version()}

    def render_to_response(self, context, **response_kwargs):
        return _secured(super().render_to_response(context, **response_kwargs))


class ChatLogoutView(auth_views.LogoutView):
    next_page = "chatpage:page"  # a URL name: resolve_url reverses it
