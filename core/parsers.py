"""The JSON parser of every DRF view: the service's JSON policy (core/json_input.py) instead of DRF's own."""

from __future__ import annotations

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from core import json_input


class JSONParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        if not raw.strip():
            raise ParseError("The body is empty: send a JSON value.")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        if encoding.lower().replace("-", "") != "utf8":
            raw = raw.decode(encoding).encode()
        try:
            return json_input.loads(raw)
        except json_input.JsonRefused as exc:
            raise ParseError(str(exc)) from None
