"""A real HTTPS webhook receiver on loopback, with a throwaway CA made by trustme.

It records every request (headers and the raw body, before any parsing) and answers with
whatever the test sets on `receiver.reply` (status, body, extra headers; or, for one event,
on `receiver.replies[event id]`), or holds the request
open until `receiver.release` is set (a slow receiver, or one that is mid-request when a worker
is killed), or drips its answer a byte at a time (a receiver that keeps every read short of a
timeout).
"""

import http.client
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import trustme


@dataclass
class Reply:
    status: int = 200
    body: bytes = b"ok"
    headers: dict = field(default_factory=dict)
    hold: bool = False  # keep the request open until `release` is set
    drip: float | None = None  # seconds between the bytes of the answer, headers included


@dataclass
class Received:
    path: str
    headers: dict
    body: bytes
    peer: tuple  # the client's (address, port): one per TCP connection
    status: int = 200  # what the receiver answered
    at: float = field(default_factory=time.time)  # arrival (wall clock), for delivery lag


class Receiver:
    def __init__(self, ca: trustme.CA, hostnames=("localhost",)):
        self.reply = Reply()
        self.replies: dict[str, Reply] = {}  # by Service-Event-Id: one event answered apart
        self.requests: list[Received] = []
        self.urls_given = 0
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.ca = ca
        self.connections = Connections()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real receivers do
            wbufsize = -1  # the reply in one write (no Nagle delay between headers and body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                if len(body) < length:  # the client died mid-body: no request, for any server
                    self.close_connection = True
                    return
                event_id = self.headers.get("Service-Event-Id", "")
                reply = receiver.replies.get(event_id, receiver.reply)
                received = Received(
                    self.path,
                    dict(self.headers),
                    body,
                    self.client_address,
                    reply.status,
                    time.time(),
                )
                receiver.requests.append(received)
                receiver.arrived.set()
                if reply.hold:
                    receiver.release.wait(30)
                if reply.drip is not None:
                    return self.drip(reply)
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            def drip(self, reply):
                head = f"HTTP/1.1 {reply.status} OK\r\nContent-Length: {len(reply.body)}\r\n\r\n"
                for byte in head.encode() + reply.body:
                    if receiver.release.wait(reply.drip):
                        return
                    try:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    except OSError:  # the client gave up and closed the connection
                        self.close_connection = True
                        return

            def log_message(self, *args):
                pass

        self.server = CountingServer(("127.0.0.1", 0), Handler)
        self.server.connections = self.connections
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert(*hostnames).configure_cert(context)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def settle(self, timeout: float = 60) -> None:
        """Returns once every connection made so far has been handled (its request recorded,
        or its client gone). A request sent by a process just killed can sit unread in the
        sockets' buffers and be recorded later: a probe connection is accepted after every
        earlier one, and once none is being handled, none can be recorded late."""
        context = ssl.create_default_context()
        self.ca.configure_trust(context)
        probe = http.client.HTTPSConnection("localhost", self.port, context=context, timeout=30)
        probe.request("GET", "/settle")
        probe.getresponse().read()
        probe.close()
        assert self.connections.wait_idle(timeout), "the receiver did not settle"

    def url(self, path="/hooks", host="localhost") -> str:
        return f"https://{host}:{self.port}{path}"

    def next_url(self) -> str:
        """A URL of its own for each endpoint made on this receiver (`/hooks`, then `/hooks/2`,
        ...), so a test tells the endpoints' deliveries apart by path."""
        self.urls_given += 1
        return self.url("/hooks" if self.urls_given == 1 else f"/hooks/{self.urls_given}")

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


class Connections:
    """How many accepted connections are being handled, counted from the accept (in the
    server's thread), not from the handler's start, so none is missed in between."""

    def __init__(self):
        self.open = 0
        self.changed = threading.Condition()

    def opened(self) -> None:
        with self.changed:
            self.open += 1

    def closed(self) -> None:
        with self.changed:
            self.open -= 1
            self.changed.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.open == 0, timeout)


class CountingServer(ThreadingHTTPServer):
    daemon_threads = True
    connections: Connections

    def process_request(self, request, client_address):
        self.connections.opened()
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.connections.closed()
