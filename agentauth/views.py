"""The browser's side of a flow: the start URL, the provider's callback and the frontend callback page.

None of these take an API key: a user's browser reaches them. Whatever happens, the browser is
redirected (to the provider, or to the frontend page with a status): a 422 for malformed
parameters is the only other answer, and nothing ends in a 500.
"""

from __future__ import annotations

import logging
import re
import traceback

from django.conf import settings
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_safe
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import APIException, Throttled
from rest_framework.views import APIView

from agentauth import frontend, services
from agentauth.api import PROVIDER_ID_PATTERN, HTTPValidationErrorSerializer, validate_query
from core.exceptions import RequestValidationError

log = logging.getLogger("agentauth")

_PROVIDER_ID = re.compile(PROVIDER_ID_PATTERN)
_BROWSER_HEADERS = {"Cache-Control": "no-store", "Pragma": "no-cache", "Referrer-Policy": "no-referrer"}
_COOKIE_PATH = "/v2/auth/"
# Link-preview fetchers of chat and social apps (they follow links posted in a conversation).
_LINK_PREVIEW_AGENTS = re.compile(r"Slackbot|Slack-ImgProxy|Twitterbot|facebookexternalhit|Discordbot|TelegramBot|"
                                  r"WhatsApp|SkypeUriPreview|MicrosoftPreview|LinkedInBot|Embedly|redditbot|"
                                  r"Googlebot|bingbot|Applebot", re.IGNORECASE)


def _page_redirect(*, status: str = "error", error: str | None = None, auth_id=None) -> HttpResponseRedirect:
    return HttpResponseRedirect(frontend.redirect_url(status=status, error=error, auth_id=auth_id))


def _secure_cookies() -> bool:
    return settings.PUBLIC_BASE_URL.startswith("https://")


class BrowserFlowView(APIView):
    """No API key; rate limited per client address; every answer is uncacheable and sends no Referer."""

    authentication_classes = []
    permission_classes = []
    throttle_scope = "auth-flow"

    def handle_exception(self, exc):
        if isinstance(exc, Throttled):
            return _page_redirect(error="rate_limited")
        if isinstance(exc, (RequestValidationError, APIException)):  # 422, 405: answered as the API answers them
            return super().handle_exception(exc)
        # The exception's text may hold request data or secrets: log its type and where, never its message.
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
        log.error("Unexpected %s at %s in %s; the browser was sent to the error page", type(exc).__name__, where,
                  type(self).__name__)
        return _page_redirect(error="server_error")

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        for name, value in _BROWSER_HEADERS.items():
            response[name] = value
        return response


class AuthStartView(BrowserFlowView):
    @extend_schema(operation_id="oauth_start", auth=[],
                   description="Opened in the user's browser (the `url` from authenticate). Binds this browser to "
                               "the flow with an HttpOnly cookie and redirects to the provider's authorization URL.",
                   responses={302: OpenApiResponse(description="To the provider, or to the frontend callback page "
                                                               "with an error.")})
    def get(self, request, auth_id):
        if _LINK_PREVIEW_AGENTS.search(request.headers.get("User-Agent", "")):
            # Chat apps fetch links to preview them; that fetch must not become "the browser that started".
            return HttpResponse("Open this link in your browser to sign in.", content_type="text/plain")
        try:
            start = services.flow_start(auth_id=auth_id, cookies=request.COOKIES)
        except services.FlowRefused as refused:
            return _page_redirect(error=refused.code)
        response = HttpResponseRedirect(start.authorize_url)
        response.set_cookie(start.cookie_name, start.cookie_value, max_age=start.max_age, path=_COOKIE_PATH,
                            secure=_secure_cookies(), httponly=True, samesite="Lax")
        return response

    @extend_schema(exclude=True)
    def head(self, request, auth_id):
        # HEAD (link checkers, prefetchers) must not bind a browser to the flow.
        return HttpResponse(status=200)


class AuthCallbackView(BrowserFlowView):
    class QuerySerializer(serializers.Serializer):
        code = serializers.CharField(required=False, allow_blank=True, max_length=4096,
                                     help_text="Authorization code from OAuth provider")
        state = serializers.CharField(required=False, allow_blank=True, max_length=512,
                                      help_text="State parameter containing auth_id")
        error = serializers.CharField(required=False, allow_blank=True, max_length=256)
        error_description = serializers.CharField(required=False, allow_blank=True, max_length=4096)

    @extend_schema(parameters=[QuerySerializer, OpenApiParameter("provider_id", str, OpenApiParameter.PATH,
                                                                 pattern=PROVIDER_ID_PATTERN)],
                   operation_id="oauth_callback", auth=[],
                   description="The provider redirects the user's browser here. Exchanges the code for tokens, "
                               "then redirects to the frontend callback page with only `status` and `auth_id` "
                               "(or an `error` code).",
                   responses={302: OpenApiResponse(description="To the frontend callback page."),
                              422: HTTPValidationErrorSerializer})
    def get(self, request, provider_id):
        if not _PROVIDER_ID.match(provider_id):
            raise RequestValidationError.single(["path", "provider_id"], "Not a valid provider id.",
                                                "string_pattern_mismatch")
        params = validate_query(self.QuerySerializer, request)
        try:
            auth_id = services.callback_handle(provider_id=provider_id, cookies=request.COOKIES,
                                               state=params.get("state"), code=params.get("code"),
                                               error=params.get("error"))
        except services.FlowRefused as refused:
            response = _page_redirect(error=refused.code, auth_id=refused.auth_id)
            if refused.auth_id:
                response.delete_cookie(services.flow_cookie_name(refused.auth_id), path=_COOKIE_PATH)
            return response
        response = _page_redirect(status="completed", auth_id=auth_id)
        response.delete_cookie(services.flow_cookie_name(auth_id), path=_COOKIE_PATH)
        return response


@require_safe
def callback_page(request):
    """The frontend callback page: success or a plain-words error. No script, nothing reflected as markup."""
    response = render(request, "agentauth/callback.html", frontend.page_context(request.GET))
    for name, value in _BROWSER_HEADERS.items():
        response[name] = value
    response["Content-Security-Policy"] = ("default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "
                                           "form-action 'none'; frame-ancestors 'none'")
    return response
