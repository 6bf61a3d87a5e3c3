"""Keep Daphne's HTTP layer (Twisted) from parsing request bodies that Django parses anyway.

Twisted's `http.Request` parses every `multipart/form-data` POST body into `request.args`, which
Daphne never reads, and answers a bare 400 when it cannot: a zstd-compressed multipart body (what
the langsmith SDK sends to `/runs/multipart`) never reaches Django. It also costs a second parse
and a second copy of every multipart upload. Twisted has a switch for this, which Daphne does not
set; this sets it.
"""

from __future__ import annotations


def disable_twisted_form_parsing() -> None:
    try:
        from daphne.http_protocol import WebRequest
    except ImportError:  # not running under Daphne
        return
    if getattr(WebRequest, "_service_form_parsing_disabled", False):
        return
    original_init = WebRequest.__init__

    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self._parsePOSTFormSubmission = False

    WebRequest.__init__ = __init__
    WebRequest._service_form_parsing_disabled = True
