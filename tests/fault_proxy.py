"""A TCP proxy on loopback that the tests (tests/sick.py) and the fault-injection suite
(bench/faults.py) put between the service and PostgreSQL or Redis, so they can break the link
without touching the shared servers.

Modes:
- `pass`: bytes flow both ways;
- `hang`: connections are accepted and bytes are read, but nothing is forwarded or answered
  until the mode changes back (a hung server: the peer waits on its own timeouts);
- `refuse`: every new connection is reset as soon as it is accepted (a server that is down).

`cut()` closes every open connection at once (a restart, a failover, a network cut); the mode
is unchanged, so `cut()` then `set_mode("refuse")` is "connections cut, new ones refused".
"""

import socket
import struct
import threading

MODES = ("pass", "hang", "refuse")


def reset(sock: socket.socket) -> None:
    """Close with an RST, as a dead server's kernel answers: the peer fails at once."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass  # already closed by the other direction
    sock.close()


def sever(sock: socket.socket) -> None:
    """End a connection another thread is reading: shutdown() wakes its recv (close() alone
    would not), and its close then resets (linger 0)."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed by its relay


class FaultProxy:
    def __init__(self, upstream: tuple[str, int], port: int = 0):
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", port), backlog=256)
        self.port = self.listener.getsockname()[1]
        self.mode = "pass"
        self._flowing = threading.Event()  # set unless hanging
        self._flowing.set()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self.accepted = 0  # connections accepted since start (for tests and the report)
        self._closed = False
        threading.Thread(target=self._accept_loop, daemon=True, name="proxy-accept").start()

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        self.mode = mode
        if mode == "hang":
            self._flowing.clear()
        else:
            self._flowing.set()

    def cut(self) -> int:
        """End every open connection; -> how many connections were cut."""
        with self._lock:
            sockets, self._open = list(self._open), set()
        for sock in sockets:
            sever(sock)
        return len(sockets) // 2

    def open_connections(self) -> int:
        with self._lock:
            return len(self._open) // 2  # a client socket and its upstream socket

    def close(self) -> None:
        self._closed = True
        self.set_mode("pass")  # wakes hanging relays so they notice the cut
        self.listener.close()
        self.cut()

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # the listener was closed
            self.accepted += 1
            if self.mode == "refuse":
                reset(client)
                continue
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        # A connection made while hanging waits here: accepted, never answered.
        self._flowing.wait()
        try:
            upstream = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            reset(client)  # the upstream is down: the client sees its connection reset
            return
        upstream.settimeout(None)
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._open.update((client, upstream))
        threading.Thread(target=self._relay, args=(upstream, client), daemon=True).start()
        self._relay(client, upstream)

    def _relay(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                self._flowing.wait()  # hanging: hold what was read, answer nothing
                target.sendall(data)
        except OSError:
            pass  # cut, or the other side went away
        with self._lock:
            self._open.discard(source)
            self._open.discard(target)
        for sock in (source, target):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
