"""Keep Daphne's HTTP layer (Twisted) from parsing request bodies that Django parses anyway; other Daphne fixes.

Twisted's `http.Request` parses every `multipart/form-data` POST body into `request.args`, which
Daphne never reads, and answers a bare 400 when it cannot: a zstd-compressed multipart body (what
the langsmith SDK sends to `/runs/multipart`) never reaches Django. It also costs a second parse
and a second copy of every multipart upload. Twisted has a switch for this, which Daphne does not
set; this sets it.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
from typing import Any

from core.rest_errors import error_json


def _class_to_patch(module: str, name: str, marker: str) -> Any:
    """Daphne's or Twisted's class `name`, or None when Daphne does not run here or the patch `marker` names is in
    place already (ready() may run more than once)."""
    try:
        cls = getattr(importlib.import_module(module), name)
    except ImportError:  # not running under Daphne
        return None
    return None if getattr(cls, marker, False) else cls


def disable_twisted_form_parsing() -> None:
    WebRequest = _class_to_patch("daphne.http_protocol", "WebRequest", "_service_form_parsing_disabled")
    if WebRequest is None:
        return
    original_init = WebRequest.__init__

    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self._parsePOSTFormSubmission = False

    WebRequest.__init__ = __init__
    WebRequest._service_form_parsing_disabled = True


# Twisted's limits on a request's head (LineReceiver.MAX_LENGTH per line, HTTPChannel.totalHeadersSize in all).
_HEAD_REFUSALS = {
    414: (b"URI Too Long", "The request line is too long: request line and headers may take at most {limit} bytes."),
    431: (b"Request Header Fields Too Large", "The request headers are too large: request line and headers may "
                                              "take at most {limit} bytes."),
}


def answer_oversized_request_heads() -> None:
    """Answer 414 (or 431) when a request's head is over Twisted's limits, instead of a silent close or bare 400.

    Twisted drops the connection without a word when one line passes LineReceiver.MAX_LENGTH (16 KiB: a long
    URL) and answers an empty 400 when the request line and headers together pass totalHeadersSize. Clients
    and proxies then retry or report a network error; a 414 says what to change.
    """
    HTTPChannel = _class_to_patch("twisted.web.http", "HTTPChannel", "_service_head_refusals")
    if HTTPChannel is None:
        return
    original_line_received = HTTPChannel.lineReceived

    def lineReceived(self, line):
        if self._HTTPChannel__first_line:
            if line:
                self._service_request_line_length = len(line)
        elif self._receivedHeaderSize + len(line) > self.totalHeadersSize:
            return _refuse_head(self, _head_status(self))
        return original_line_received(self, line)

    def lineLengthExceeded(self, line):
        # Still waiting for the request line: that is the line that is too long.
        return _refuse_head(self, 414 if self._HTTPChannel__first_line else _head_status(self))

    # Deliberate patches of Twisted's class (see the module docstring), and a marker that they are in place.
    HTTPChannel.lineReceived = lineReceived
    HTTPChannel.lineLengthExceeded = lineLengthExceeded
    HTTPChannel._service_head_refusals = True


def _head_status(channel) -> int:
    """414 when the request line is most of the head, 431 when the headers are."""
    request_line = getattr(channel, "_service_request_line_length", 0)
    return 414 if request_line * 2 > channel.totalHeadersSize else 431


def _refuse_head(channel, status: int) -> None:
    reason, message = _HEAD_REFUSALS[status]
    body = error_json(message.format(limit=channel.totalHeadersSize))
    channel.transport.write(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                            b"Connection: close\r\n\r\n%s" % (status, reason, len(body), body))
    channel.loseConnection()


class ResponseFlow:
    """Whether the client keeps up with a streaming response Daphne serves: a push producer on its Twisted request.

    Daphne gives an ASGI app no backpressure: every body chunk it is sent joins the connection's buffer, however
    slowly the client reads, so a fast stream to slow clients grows the process by what they have not read. Twisted
    pauses a request's producer when its connection's buffer passes 64 KiB and resumes it once the buffer is empty;
    `writable` follows that. Call `close()` before the response's last body message.
    """

    def __init__(self, request) -> None:
        self.request = request
        self.writable = asyncio.Event()
        self.writable.set()
        request.registerProducer(self, True)

    def pauseProducing(self) -> None:
        self.writable.clear()

    def resumeProducing(self) -> None:
        self.writable.set()

    def stopProducing(self) -> None:
        self.writable.set()

    def close(self) -> None:
        # After a disconnect the request has no channel left to unregister from.
        if self.request.producer is self and self.request.channel is not None:
            self.request.unregisterProducer()
        self.writable.set()


def response_flow(send) -> ResponseFlow | None:
    """A ResponseFlow for the response that `send` (an ASGI send callable) writes, or None when Daphne does not serve
    it (tests' in-process communicators) or the request already has a producer."""
    try:
        from daphne.http_protocol import WebRequest
    except ImportError:  # not running under Daphne
        return None
    # Daphne's send is `partial(server.handle_reply, request)`, and Channels passes it to consumers unchanged.
    request = send.args[0] if isinstance(send, functools.partial) and send.args else None
    if not isinstance(request, WebRequest) or request.producer is not None or request.channel is None:
        return None
    return ResponseFlow(request)
