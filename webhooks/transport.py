"""One webhook POST to an address the URL guard checked (spec "Delivery request").

urllib3 connects to the checked IP itself, so no second DNS lookup happens between the check
and the connection (a rebinding answer cannot redirect it), while SNI, the certificate check
and the Host header still use the URL's host name. Redirects are not followed (a 3xx is a
failure), the response body is read only up to its first 2 KB, and the whole exchange is
bounded by the 10-second timeout.

That timeout is one wall-clock deadline per attempt, not per socket operation: a receiver that
drips its answer a byte at a time keeps every read short of any read timeout, and would
otherwise hold the thread (a worker's, or simulate-webhook's web thread) for as long as it
likes, past the delivery's lease and outside the endpoint's bulkhead. So the TCP connect gets
the time left, and every TLS socket of the pools is a `_DeadlineSocket`, which gives each
handshake, send and receive only the time left until the deadline of the attempt its thread
is making.

Connections are kept alive between deliveries in one pool per target (host name, checked
address, port and trusted CAs), shared by the worker's threads: consecutive deliveries to a
receiver reuse a TLS connection instead of a new handshake each (on both sides), and a
connection is only ever reused for the very target it was verified for. A connection that
failed, timed out, or still had unread body past the 2 KB is closed, not reused; one the
receiver closed while idle is noticed before reuse and replaced.
"""

import ipaddress
import logging
import ssl
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import urllib3
from django.conf import settings
from urllib3.exceptions import HTTPError, ReadTimeoutError
from urllib3.util.ssl_ import create_urllib3_context

from webhooks.urlguard import CheckedURL

log = logging.getLogger(__name__)

TIMEOUT_SECONDS = 10
MAX_STORED_BODY = 2048  # bytes (spec "Limits": first 2 KB)
USER_AGENT = "svc-webhooks/1"
# Idle connections kept per target: one per delivery thread of the Procfile's worker. More
# threads than this on one target still work; their extra connections are closed after use.
CONNECTIONS_PER_TARGET = 16
MAX_TARGETS = 256  # pools kept; the least recently used one is closed beyond that


@dataclass(frozen=True)
class Outcome:
    http_status: int | None
    response_body: str
    error: str | None
    duration_ms: int

    @property
    def delivered(self) -> bool:
        return self.http_status is not None and 200 <= self.http_status < 300


# The deadline (time.monotonic()) of the attempt this thread is making, if any. A connection
# is used by one thread at a time, so its socket serves that thread's attempt.
_attempt = threading.local()


def _time_left() -> float | None:
    deadline = getattr(_attempt, "deadline", None)
    return None if deadline is None else deadline - time.monotonic()


class _DeadlineSocket(ssl.SSLSocket):
    """Each blocking operation waits at most until the attempt's deadline (each runs under
    one socket timeout in CPython's ssl module, however many reads it takes)."""

    def _bound(self) -> None:
        left = _time_left()
        if left is None:
            return
        if left <= 0:
            raise TimeoutError("the attempt's deadline has passed")
        self.settimeout(left)

    def do_handshake(self, *args, **kwargs):
        self._bound()
        return super().do_handshake(*args, **kwargs)

    def send(self, *args, **kwargs):  # sendall() sends through send()
        self._bound()
        return super().send(*args, **kwargs)

    def recv_into(self, *args, **kwargs):  # what http.client's reads come down to
        self._bound()
        return super().recv_into(*args, **kwargs)

    def recv(self, *args, **kwargs):
        self._bound()
        return super().recv(*args, **kwargs)


def _tls_context(extra_ca_bundle: str | None) -> ssl.SSLContext:
    """System CAs plus WEBHOOK_CA_BUNDLE (extra CAs, e.g. a local receiver's in tests)."""
    context = create_urllib3_context()
    context.load_default_certs()
    if extra_ca_bundle:
        context.load_verify_locations(cafile=extra_ca_bundle)
    context.sslsocket_class = _DeadlineSocket
    return context


class _Pools:
    """target -> its urllib3 pool; created under a lock, so two threads never build two."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pools: OrderedDict[tuple, urllib3.HTTPSConnectionPool] = OrderedDict()
        self._contexts: dict[str | None, ssl.SSLContext] = {}

    def get(self, target: CheckedURL) -> urllib3.HTTPSConnectionPool:
        ca_bundle = settings.WEBHOOK_CA_BUNDLE
        key = (target.host, target.addresses[0], target.port, ca_bundle)
        with self._lock:
            pool = self._pools.pop(key, None) or self._new_pool(target, ca_bundle)
            self._pools[key] = pool
            while len(self._pools) > MAX_TARGETS:
                self._pools.popitem(last=False)[1].close()
        return pool

    def _new_pool(self, target: CheckedURL, ca_bundle: str | None):
        if ca_bundle not in self._contexts:  # loading the system CAs takes ~20 ms of CPU
            self._contexts[ca_bundle] = _tls_context(ca_bundle)
        return urllib3.HTTPSConnectionPool(
            str(target.addresses[0]),
            target.port,
            maxsize=CONNECTIONS_PER_TARGET,
            retries=False,
            timeout=urllib3.Timeout(connect=TIMEOUT_SECONDS, read=TIMEOUT_SECONDS),
            ssl_context=self._contexts[ca_bundle],
            cert_reqs="CERT_REQUIRED",
            server_hostname=target.host,
            assert_hostname=target.host,
        )


_pools = _Pools()


def _url_host(address) -> str:
    return f"[{address}]" if isinstance(address, ipaddress.IPv6Address) else str(address)


def _host_header(target: CheckedURL) -> str:
    host = _url_host(ipaddress.ip_address(target.host)) if _is_ip(target.host) else target.host
    return host if target.port == 443 else f"{host}:{target.port}"


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _read_capped(response: urllib3.HTTPResponse) -> tuple[bytes, bool]:
    """The first 2 KB of the body, and whether that was all of it."""
    body = b""
    while len(body) < MAX_STORED_BODY:
        chunk = response.read(512)
        if not chunk:
            return body, True
        body += chunk
    return body[:MAX_STORED_BODY], False


def post(target: CheckedURL, body: bytes, headers: dict[str, str]) -> Outcome:
    started = time.monotonic()
    _attempt.deadline = started + TIMEOUT_SECONDS
    try:
        return _exchange(target, body, headers, started)
    finally:
        _attempt.deadline = None


def _exchange(target: CheckedURL, body: bytes, headers: dict[str, str], started) -> Outcome:
    try:
        response = _pools.get(target).urlopen(
            "POST",
            target.path,
            body=body,
            headers={**headers, "Host": _host_header(target), "User-Agent": USER_AGENT},
            redirect=False,
            preload_content=False,
            release_conn=False,
            timeout=urllib3.Timeout(connect=max(_time_left(), 0.001), read=TIMEOUT_SECONDS),
        )
        complete = False
        try:
            raw, complete = _read_capped(response)
        finally:
            _finish(response, complete=complete)
    except HTTPError as exc:
        log.info(
            "webhook %s to %s (%s port %s) failed: %r",
            headers.get("Service-Event-Id"),
            target.host,
            target.addresses[0],
            target.port,
            exc,
        )
        return Outcome(None, "", _describe(exc), _elapsed_ms(started))
    status = response.status
    error = None if 200 <= status < 300 else f"HTTP {status}: only a 2xx response is a success"
    if 300 <= status < 400:
        error = f"HTTP {status}: redirects are not followed"
    return Outcome(status, raw.decode("utf-8", errors="replace"), error, _elapsed_ms(started))


def _finish(response: urllib3.HTTPResponse, *, complete: bool) -> None:
    """Back to the pool if the body was read to its end; otherwise closed, since the rest of
    the body would be read as the next delivery's response."""
    if not complete:
        response.close()
    response.release_conn()


CONNECTION_FAILED = (
    "connection failed: no HTTPS exchange with the endpoint (it could not be reached, the "
    "connection was closed, or TLS failed: check that the URL serves HTTPS with a valid "
    "certificate for its host name)"
)


def _describe(exc: HTTPError) -> str:
    """What the merchant sees (an attempt's `error`): a timeout once connected, else one
    message. Refused, reset, a connect that hangs and a TLS failure are not told apart: which
    one an address gives is how a port scan reads a network (issue 20). The exception itself
    is logged, with the event, host and address, for the operator."""
    if isinstance(exc, ReadTimeoutError):
        return f"timeout: no complete response within {TIMEOUT_SECONDS} seconds"
    return CONNECTION_FAILED


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
