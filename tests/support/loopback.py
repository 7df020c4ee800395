"""Small HTTP servers on loopback for tests that need one (a merchant's page, a faulty proxy
in front of an emulator, stand-in web pools): the handler's answer and the thread that serves
it, written once."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing and answers with `answer`."""

    def answer(self, status: int, body: bytes, headers: dict | None = None) -> None:
        self.send_response(status)
        for name, value in {**(headers or {}), "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serving(handler: type[BaseHTTPRequestHandler], server=ThreadingHTTPServer):
    """`server` on 127.0.0.1 at a free port, serving `handler` from a daemon thread; -> it
    (`server_address[1]` is its port; `shutdown()` stops it)."""
    running = server(("127.0.0.1", 0), handler)
    threading.Thread(target=running.serve_forever, daemon=True).start()
    return running
