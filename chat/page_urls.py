"""The chat page's routes (config/urls.py includes them at the root); the chat API is in chat/routing.py."""

from __future__ import annotations

from django.urls import path

from chat import pages

app_name = "chatpage"

urlpatterns = [
    path("", pages.chat_page, name="home"),
    path("chat/", pages.chat_page, name="page"),
    path("chat/login/", pages.ChatLoginView.as_view(), name="login"),
    path("chat/logout/", pages.ChatLogoutView.as_view(), name="logout"),
]
