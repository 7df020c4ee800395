"""A webhook receiver for the benches: HTTPS on loopback with a certificate of a CA made for
the run (trustme), answering every POST 200 at once, in a process of its own. A service
started by a bench trusts it through WEBHOOK_CA_BUNDLE=CA_FILE."""

import socket
import ssl
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing import Process
from pathlib import Path

import trustme

WORK = Path(tempfile.mkdtemp(prefix="bench-receiver-"))
CA = trustme.CA()
CA_FILE = WORK / "ca.pem"
CA.cert_pem.write_to_path(str(CA_FILE))


class Ok(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The status line, headers and body leave in one write, as from any production server:
    # written apart, Nagle's algorithm holds the body back until our delayed ACK (40 ms).
    wbufsize = -1

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def serve_healthy(port: int, cert_dir: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", port), Ok)
    server.daemon_threads = True
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(f"{cert_dir}/cert.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_healthy() -> tuple[int, Process]:
    """The receiver, started and accepting connections: (its port, its process)."""
    CA.issue_cert("localhost").private_key_and_cert_chain_pem.write_to_path(str(WORK / "cert.pem"))
    port = free_port()
    healthy = Process(target=serve_healthy, args=(port, str(WORK)), daemon=True)
    healthy.start()
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    return port, healthy
