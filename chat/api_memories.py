"""The chat page's Memory panel API: what the deep agent remembers for the caller, and forgetting one entry.

One view per operation, on the caller's own memory (chat/memories.py): the owner the chat protocol resolves (an API
key's workspace, the logged-in user, or the anonymous owner where allowed). Errors are `{"detail": ...}`: 401/403 as
the protocol refuses a caller, 404 for a memory the caller does not have (someone else's included), 422 for a name
that can name no memory file.
"""

from __future__ import annotations

import unicodedata

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from agentruntime.selectors import Caller, ChatAccessError, authorize
from chat.memories import memory_delete, memory_list
from core.exceptions import RequestValidationError, ServiceError

MAX_NAME_LENGTH = 1024


class CallerRefused(ServiceError):
    """agentruntime.access's refusal of a caller (401 or 403) as a REST error, which core.exception_handler renders."""

    def __init__(self, refusal: ChatAccessError):
        super().__init__(refusal.message)
        self.status_code = refusal.status


class ChatApi(APIView):
    """Authenticates as the chat protocol does; `self.caller` is who calls. A cookie-authenticated write must come
    from this site (agentruntime.access.check_write_origin), which is what stands in for CSRF here."""

    # Not in the service's REST schema (/api/schema/), whose security and errors are the API keys'
    # (core.openapi_generation): like the protocol's routes, these authenticate as the chat does, anonymously where
    # allowed (docs/chat.md).
    documented_separately = True
    authentication_classes: list = []
    permission_classes: list = []
    # None of DRF's throttles either: they would read `request.user`, which DRF then sets to AnonymousUser.
    throttle_classes: list = []

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        headers = {name.lower(): value for name, value in request.headers.items()}
        try:
            self.caller: Caller = authorize(headers=headers, client_host=request.META.get("REMOTE_ADDR", ""),
                                            user=getattr(request._request, "user", None),
                                            write=request.method not in ("GET", "HEAD", "OPTIONS"))
        except ChatAccessError as refusal:
            raise CallerRefused(refusal) from None

    def perform_authentication(self, request):
        """Nothing here: `initial` resolves the caller (DRF's `request.user` would load the session every time)."""


class MemoryEntryOutputSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The file's path below /memories/, e.g. `favourite-number.md`.")
    path = serializers.CharField(help_text="The path the agent's file tools use, e.g. `/memories/favourite-number.md`.")
    content = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class MemoryListApi(ChatApi):
    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ChatMemoryList"

        entries = MemoryEntryOutputSerializer(many=True)

    @extend_schema(responses=OutputSerializer, operation_id="chat_memory_list",
                   summary="What the deep agent remembers for the caller: its files under /memories/, by name.")
    def get(self, request):
        entries = memory_list(scope=self.caller.store_scope)
        return Response(self.OutputSerializer({"entries": entries}).data)


class MemoryDeleteApi(ChatApi):
    @extend_schema(responses={204: None}, operation_id="chat_memory_delete",
                   summary="Forget one memory entry: the agent no longer finds it, in any conversation.")
    def delete(self, request, name: str):
        memory_delete(scope=self.caller.store_scope, name=valid_name(name))
        return Response(status=204)


def valid_name(name: str) -> str:
    """A memory file's name as deepagents could have written it, else a 422 (the database is never asked)."""
    segments = name.split("/")
    if len(name) > MAX_NAME_LENGTH:
        problem = f"A memory name is at most {MAX_NAME_LENGTH} characters."
    elif any(unicodedata.category(c) in ("Cc", "Cs") for c in name):
        problem = "A memory name has no control characters."
    elif any(segment in ("", ".", "..") for segment in segments):
        problem = "A memory name is a relative file path without empty, '.' or '..' segments."
    else:
        return name
    raise RequestValidationError.single(["path", "name"], problem)
