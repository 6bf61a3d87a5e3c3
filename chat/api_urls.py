"""The chat app's REST routes (config/urls.py mounts them under /api/); the protocol's are in chat/routing.py."""

from __future__ import annotations

from django.urls import path

from chat import api_memories

app_name = "chatapi"

urlpatterns = [
    path("chat/memories", api_memories.MemoryListApi.as_view(), name="memory-list"),
    path("chat/memories/<path:name>", api_memories.MemoryDeleteApi.as_view(), name="memory-delete"),
]
