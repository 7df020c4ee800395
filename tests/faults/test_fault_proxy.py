"""The fault-injection suite's TCP proxy (tests/fault_proxy.py), on real loopback sockets: what
each mode does to the connections the service holds and opens."""

import socket
import threading

import pytest

from tests.fault_proxy import FaultProxy

SHORT = 0.3  # how long "no answer" is watched for: the proxy holds bytes, it never delays them


@pytest.fixture
def echo_server():
    """An upstream that echoes every chunk back."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve(conn):
        with conn:
            while data := conn.recv(4096):
                conn.sendall(data)

    def accept():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()
    server.close()


@pytest.fixture
def proxy(echo_server):
    proxy = FaultProxy(echo_server)
    yield proxy
    proxy.close()


def connect(proxy: FaultProxy) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=5)


def round_trip(sock: socket.socket, data: bytes = b"ping") -> bytes:
    sock.sendall(data)
    return sock.recv(4096)


def gone(sock: socket.socket) -> bool:
    """The connection ended: EOF or a reset."""
    try:
        return sock.recv(4096) == b""
    except ConnectionResetError:
        return True


def refused(proxy: FaultProxy) -> bool:
    """A new connection is reset (during the handshake or just after it)."""
    try:
        sock = connect(proxy)
    except ConnectionResetError:
        return True
    with sock:
        return gone(sock)


def test_pass_forwards_both_ways(proxy):
    with connect(proxy) as sock:
        assert round_trip(sock) == b"ping"
        assert round_trip(sock, b"again") == b"again"


def test_hang_holds_open_and_new_connections_until_the_mode_changes(proxy):
    held = connect(proxy)
    assert round_trip(held) == b"ping"
    proxy.set_mode("hang")
    held.settimeout(SHORT)
    with pytest.raises(TimeoutError):
        round_trip(held, b"stuck")
    fresh = connect(proxy)  # accepted, like a hung server's kernel does
    fresh.settimeout(SHORT)
    with pytest.raises(TimeoutError):
        round_trip(fresh, b"new")

    proxy.set_mode("pass")
    held.settimeout(5)
    fresh.settimeout(5)
    assert held.recv(4096) == b"stuck"
    assert fresh.recv(4096) == b"new"
    held.close()
    fresh.close()


def test_cut_ends_open_connections_and_refuse_resets_new_ones(proxy):
    first, second = connect(proxy), connect(proxy)
    assert round_trip(first) == round_trip(second) == b"ping"
    proxy.set_mode("refuse")
    assert proxy.cut() == 2
    assert gone(first) and gone(second)
    assert refused(proxy)

    proxy.set_mode("pass")
    with connect(proxy) as again:
        assert round_trip(again) == b"ping"
    first.close()
    second.close()


def test_a_dead_upstream_resets_the_client():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        dead = unused.getsockname()  # bound, not listening: connections are refused
        proxy = FaultProxy(dead)
        try:
            assert refused(proxy)
        finally:
            proxy.close()


def test_unknown_mode_is_refused(proxy):
    with pytest.raises(ValueError, match="unknown mode"):
        proxy.set_mode("slow")
