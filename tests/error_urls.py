"""A URLconf for the error-handler tests: views that raise each domain error."""

from __future__ import annotations

from django.urls import path
from rest_framework.views import APIView

from core import exceptions


class RaiseApi(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    def get(self, request, name):
        raise getattr(exceptions, name)("Told to fail.")


urlpatterns = [path("raise/<str:name>", RaiseApi.as_view())]
