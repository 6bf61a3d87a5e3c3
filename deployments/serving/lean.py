"""Libraries' optional extras that a serving process never uses, kept out of its memory.

Some libraries import an extra whenever it is installed: DRF imports django.contrib.postgres (and psycopg) for its
PostgreSQL fields and pygments for its browsable API, django.test (which drf-spectacular imports) imports jinja2 for
its template tests, Twisted imports pyOpenSSL, cryptography and service_identity
for TLS, autobahn imports click to colour its output, httpx imports its command line client (click, rich,
pygments). The service needs those packages, so they are installed; a revision's process serves JSON over plain
HTTP on loopback from SQLite and needs none of them: about 20 MiB. They are hidden only while the
library is first imported (the library then takes its "not installed" path); anything imported later, such as a
graph's own `import OpenSSL`, gets the real package.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def hidden(*names: str) -> Iterator[None]:
    """`import <name>` raises ImportError inside the block, for each of `names` not imported yet."""
    hiding = [name for name in names if name not in sys.modules]
    for name in hiding:
        # The import system's "known to be missing" (typeshed types sys.modules' values as modules only).
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for name in hiding:
            if sys.modules.get(name, False) is None:
                del sys.modules[name]


def import_without_extras(module: str, *extras: str) -> None:
    """Import `module` (if it is not imported yet) with `extras` hidden."""
    if module in sys.modules:
        return
    with hidden(*extras):
        importlib.import_module(module)


def import_libraries(*, sqlite: bool) -> None:
    """Import the libraries that a serving process uses without the extras it does not (before anything else does)."""
    # With PostgreSQL, DRF's PostgreSQL fields are not dead weight.
    postgres = () if not sqlite else ("psycopg", "psycopg2")
    import_without_extras("rest_framework.serializers", "pygments", *postgres)
    import_without_extras("httpx", "httpx._main")
    import_without_extras("django.test", "jinja2")


@contextmanager
def standing_in(name: str, module: types.ModuleType) -> Iterator[None]:
    """`import <name>` gives `module` inside the block; afterwards the real module is imported on demand."""
    if name in sys.modules:
        yield
        return
    parent, _, child = name.rpartition(".")
    sys.modules[name] = module
    try:
        yield
    finally:
        if sys.modules.get(name) is module:
            del sys.modules[name]
        if parent in sys.modules and getattr(sys.modules[parent], child, None) is module:
            delattr(sys.modules[parent], child)


class DeferredWebSocketFactory:
    """Daphne's WebSocketFactory, made (with autobahn) on the first WebSocket handshake.

    A serving process routes no WebSocket (its application refuses them), and autobahn, with cbor2, cffi and
    cryptography, is about 13 MiB. Daphne makes its factory at start and sets its options; both are replayed on the
    real one if a handshake ever comes, so that it is answered exactly as before.
    """

    def __init__(self, *args, **kwargs):
        self._arguments = (args, kwargs)
        self._options: dict = {}
        self._factory = None

    def setProtocolOptions(self, **options) -> None:  # noqa: N802 (autobahn's name)
        self._options.update(options)

    def buildProtocol(self, addr):  # noqa: N802 (Twisted's name)
        if self._factory is None:
            from daphne.ws_protocol import WebSocketFactory

            args, kwargs = self._arguments
            self._factory = WebSocketFactory(*args, **kwargs)
            self._factory.setProtocolOptions(**self._options)
        return self._factory.buildProtocol(addr)


def import_daphne() -> None:
    """Import Daphne's server, with Twisted, without TLS (it listens on plain TCP) and without autobahn until a
    WebSocket handshake needs it."""
    placeholder = types.ModuleType("daphne.ws_protocol")
    placeholder.WebSocketFactory = DeferredWebSocketFactory  # type: ignore[attr-defined]
    with standing_in("daphne.ws_protocol", placeholder):
        import_without_extras("daphne.server", "OpenSSL", "service_identity", "click")
