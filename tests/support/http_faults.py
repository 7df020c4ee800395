"""An HTTP proxy on loopback in front of a processor's emulator, for the faults a real
processor shows: it forwards each request and, for requests matching `fail_after`, answers
500 once the emulator has acted (the worst case: the money moved, the answer was lost); the
next `limited` requests matching `limit` it answers 429 without forwarding (the processor's
rate limit). TCP-level faults (refused, hung) are tests/fault_proxy.py's."""

import re

import requests

from tests.support.loopback import QuietHandler, serving


class FaultyProcessorProxy:
    def __init__(self, upstream: str):
        self.upstream = upstream
        self.fail_after: re.Pattern | None = (
            None  # "METHOD path" regex answered 500 after forwarding
        )
        self.failed = 0
        self.limit: str | None = None  # a regex of "METHOD path": 429, not forwarded
        self.limited = 0  # how many more of them
        proxy = self

        class Handler(QuietHandler):
            def do_GET(self):
                self._relay()

            def do_POST(self):
                self._relay()

            def _relay(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if proxy.limited and re.search(proxy.limit, f"{self.command} {self.path}"):
                    proxy.limited -= 1
                    return self._answer(429, b'{"error": {"type": "invalid_request_error"}}')
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                answer = requests.request(
                    self.command, proxy.upstream + self.path, data=body, headers=headers, timeout=10
                )
                status, content = answer.status_code, answer.content
                if proxy.fail_after and re.search(proxy.fail_after, f"{self.command} {self.path}"):
                    proxy.failed += 1
                    status, content = 500, b'{"error": {"type": "api_error", "message": "boom"}}'
                self._answer(status, content)

            def _answer(self, status: int, content: bytes):
                self.answer(status, content, {"Content-Type": "application/json"})

        self.server = serving(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()
