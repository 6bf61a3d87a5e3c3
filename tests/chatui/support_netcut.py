"""A loopback TCP proxy whose connections can be cut, to drop a browser's live connections for real.

Chromium's offline emulation (`context.set_offline`) fails new requests but leaves open responses, such as an SSE
stream, untouched; cutting the proxy resets them, as a dropped network does.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading

from tests.support_processes import free_port


class CuttableProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1"):
        self.target = (target_host, target_port)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._cut = threading.Event()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._running = True
        self._thread = threading.Thread(target=self._accept_loop, name="cuttable-proxy", daemon=True)
        self._thread.start()

    def cut(self) -> None:
        """Reset every open connection and refuse new ones until `restore()`."""
        self._cut.set()
        with self._lock:
            doomed, self._sockets = list(self._sockets), set()
        for sock in doomed:
            _reset(sock)

    def restore(self) -> None:
        self._cut.clear()

    def close(self) -> None:
        self._running = False
        self.cut()
        with contextlib.suppress(OSError):
            self._listener.close()
        self._thread.join(timeout=5)

    def _accept_loop(self) -> None:
        while self._running:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._cut.is_set():
                _reset(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                _reset(client)
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            with self._lock:
                self._sockets.discard(source)
                self._sockets.discard(sink)
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()


def _reset(sock: socket.socket) -> None:
    # SO_LINGER with a zero timeout makes close() send a RST: the peer sees a broken connection, not a clean end.
    # shutdown() first: it wakes the pump thread blocked in recv(), which close() alone would not.
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
