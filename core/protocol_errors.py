"""The Agent Streaming Protocol's error body, `{"error": <code>, "message": <text>}`: the one place it is built.

The chat routes answer it with a status (chat's consumer base class), `/commands` wraps it in its envelope
(`{"type": "error", "id": ..., "error", "message"}`), a stream's `error` event carries it as its data (also on the
Agent Server API's streams, whose run errors have the same shape), and a serving process refuses a request that
bypassed the proxy with it. Codes are snake_case words (`not_found`, `invalid_argument`) or, in an `error` event,
the name of the exception that ended the run.
"""

from __future__ import annotations


def error_body(code: str, message: str) -> dict:
    return {"error": code, "message": message}

