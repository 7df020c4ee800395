"""Sick dependencies for tests: a TCP proxy on loopback in front of the real Redis or PostgreSQL
that forwards (up), accepts connections and never answers (hung), or closes every connection
(down, as a restarting server). It counts the connections it accepts, so a test proves that a
call touched no socket without timing it. A dead Redis needs no proxy: a closed port
(CLOSED_PORT_URL)."""

import socket
import threading
from urllib.parse import urlsplit

CLOSED_PORT_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
FORWARD, HANG, DOWN = "forward", "hang", "down"
DEFAULT_PORTS = {"redis": 6379, "postgres": 5432, "postgresql": 5432}


class Proxy:
    def __init__(self, url: str, mode: str = FORWARD):
        target = urlsplit(url)
        self.target = (target.hostname, target.port or DEFAULT_PORTS[target.scheme])
        self.mode, self.accepted = mode, 0
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = target._replace(netloc=f"{_userinfo(target)}127.0.0.1:{self.port}").geturl()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            self.accepted += 1
            if self.mode == DOWN:
                client.close()
                continue
            self._sockets.append(client)
            if self.mode == FORWARD:
                upstream = socket.create_connection(self.target)
                self._sockets.append(upstream)
                for source, sink in ((client, upstream), (upstream, client)):
                    threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()

    def go_down(self) -> None:
        """Every connection through the proxy is cut, and new ones are closed at once."""
        self.mode = DOWN
        self._close_connections()

    def close(self) -> None:
        self._listener.close()
        self._close_connections()

    def _close_connections(self) -> None:
        sockets, self._sockets = self._sockets, []
        for each in sockets:
            _cut(each)


def _userinfo(url) -> str:
    return url.netloc.rpartition("@")[0] + "@" if "@" in url.netloc else ""


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        _cut(sink)


def _cut(sock: socket.socket) -> None:
    """Ends the connection, also for a thread blocked reading it (close alone would leave the
    connection open until that read returns: the server's session would outlive the test)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already ended
    sock.close()
