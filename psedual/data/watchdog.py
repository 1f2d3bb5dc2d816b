"""A whole-download deadline for urllib: `Watchdog` shuts every connection of one download
attempt when its deadline passes (`psedual data fetch`), which no per-read timeout can do."""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.request


class Watchdog:
    """Keeps one attempt within the download's deadline: at the deadline it shuts every connection
    the attempt opened (redirects included), so a read blocked on the status line, a header or
    the body returns at once. The per-read timeout cannot do this: each byte restarts it."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        """time.monotonic() past which the attempt stops."""
        self.fired = False
        """The deadline passed and the connections were shut."""
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(max(deadline - time.monotonic(), 0.0), self._fire)
        self._timer.daemon = True  # never keeps the process alive
        self.opener = urllib.request.build_opener(_WatchedHTTPHandler(self), _WatchedHTTPSHandler(self))
        """urllib's default opener (proxies, redirects), with connections this watchdog can shut."""

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def opened(self, sock: socket.socket) -> None:
        """A connection of the attempt is open: shut it at the deadline (now, if that has passed)."""
        with self._lock:
            self._sockets.append(sock)
            if self.fired:
                _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    # socket.socket's own shutdown, also for a TLS socket: SSLSocket.shutdown would drop its TLS
    # state under the thread reading it; shutting the descriptor makes that read return or raise.
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:  # already closed by the reader: nothing left to stop
        pass


class _Watched:
    """A connection that hands its socket (the TLS one, for HTTPS) to the watchdog once connected."""

    def __init__(self, *args, watchdog: Watchdog, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._watchdog = watchdog

    def connect(self) -> None:
        super().connect()
        self._watchdog.opened(self.sock)


class _WatchedHTTP(_Watched, http.client.HTTPConnection):
    pass


class _WatchedHTTPS(_Watched, http.client.HTTPSConnection):
    pass


class _WatchedHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, watchdog: Watchdog) -> None:
        super().__init__()
        self.watchdog = watchdog

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_WatchedHTTP, req, watchdog=self.watchdog)


class _WatchedHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, watchdog: Watchdog) -> None:
        super().__init__()
        self.watchdog = watchdog

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_WatchedHTTPS, req, context=self._context, watchdog=self.watchdog)
