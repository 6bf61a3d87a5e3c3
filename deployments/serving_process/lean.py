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
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def hidden(*names: str) -> Iterator[None]:
    """`import <name>` raises ImportError inside the block, for each of `names` not imported yet."""
    hiding = [name for name in names if name not in sys.modules]
    for name in hiding:
        sys.modules[name] = None  # the import system's "known to be missing"
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


def import_daphne() -> None:
    """Import Daphne's server, with Twisted and autobahn, without TLS: it listens on plain TCP."""
    import_without_extras("daphne.server", "OpenSSL", "service_identity", "click")
