"""One webhook POST to an address the URL guard checked (spec "Delivery request").

requests connects to the checked IP itself, so no second DNS lookup happens between the check
and the connection (a rebinding answer cannot redirect it), while SNI, the certificate check
and the Host header still use the URL's host name. Redirects are not followed (a 3xx is a
failure), the response body is read only up to its first 2 KB, and the whole exchange is
bounded by the 10-second timeout. Each worker thread keeps its TLS connections to a receiver
alive between deliveries (a receiver that closes them costs only a new handshake).
"""

import ipaddress
import ssl
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from functools import cache

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.util.ssl_ import create_urllib3_context

from webhooks.urlguard import CheckedURL

TIMEOUT_SECONDS = 10
MAX_STORED_BODY = 2048  # bytes (spec "Limits": first 2 KB)
USER_AGENT = "svc-webhooks/1"
MAX_SESSIONS_PER_THREAD = 64

_thread = threading.local()


@dataclass(frozen=True)
class Outcome:
    http_status: int | None
    response_body: str
    error: str | None
    duration_ms: int

    @property
    def delivered(self) -> bool:
        return self.http_status is not None and 200 <= self.http_status < 300


@cache
def _tls_context(extra_ca_bundle: str | None) -> ssl.SSLContext:
    """System CAs plus WEBHOOK_CA_BUNDLE (extra CAs, e.g. a local receiver's in tests)."""
    context = create_urllib3_context()
    context.load_default_certs()
    if extra_ca_bundle:
        context.load_verify_locations(cafile=extra_ca_bundle)
    return context


class PinnedAddressAdapter(HTTPAdapter):
    """Connects wherever the request URL points (the checked IP) while TLS verifies `host`."""

    def __init__(self, host: str):
        self.host = host  # read by init_poolmanager, which HTTPAdapter.__init__ calls
        super().__init__(max_retries=0)

    def init_poolmanager(self, connections, maxsize, block=False, **pool_kwargs):
        pool_kwargs.update(
            server_hostname=self.host,
            assert_hostname=self.host,
            ssl_context=_tls_context(settings.WEBHOOK_CA_BUNDLE),
        )
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)

    def cert_verify(self, conn, url, verify, cert):
        # Always verify, with the CAs already in our context: requests would otherwise load its
        # own CA file into it again for every connection.
        conn.cert_reqs = "CERT_REQUIRED"


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


def _read_capped(response: requests.Response, deadline: float) -> bytes:
    """The first 2 KB of the body; a receiver dripping bytes cannot hold us past the deadline."""
    body = b""
    for chunk in response.iter_content(chunk_size=512):
        body += chunk
        if len(body) >= MAX_STORED_BODY or time.monotonic() > deadline:
            break
    return body[:MAX_STORED_BODY]


def _new_session(host: str) -> requests.Session:
    session = requests.Session()
    # No proxy or CA file from the environment: the connection goes straight to the checked
    # address, trusting only our CA context.
    session.trust_env = False
    session.mount("https://", PinnedAddressAdapter(host))
    return session


def _session_for(target: CheckedURL) -> requests.Session:
    """This thread's session for (host, checked address, port): consecutive deliveries to one
    receiver reuse its kept-alive TLS connection instead of a new handshake each time. A new
    address (DNS changed) gets a new session; the least recently used ones are closed."""
    sessions = _thread.__dict__.setdefault("sessions", OrderedDict())
    key = (target.host, target.addresses[0], target.port, settings.WEBHOOK_CA_BUNDLE)
    session = sessions.pop(key, None) or _new_session(target.host)
    sessions[key] = session
    while len(sessions) > MAX_SESSIONS_PER_THREAD:
        sessions.popitem(last=False)[1].close()
    return session


def post(target: CheckedURL, body: bytes, headers: dict[str, str]) -> Outcome:
    started = time.monotonic()
    deadline = started + TIMEOUT_SECONDS
    url = f"https://{_url_host(target.addresses[0])}:{target.port}{target.path}"
    try:
        with _session_for(target).post(
            url,
            data=body,
            headers={**headers, "Host": _host_header(target), "User-Agent": USER_AGENT},
            timeout=TIMEOUT_SECONDS,
            allow_redirects=False,
            stream=True,
        ) as response:
            raw = _read_capped(response, deadline)
            status = response.status_code
    except requests.RequestException as exc:
        return Outcome(None, "", _describe(exc), _elapsed_ms(started))
    error = None if 200 <= status < 300 else f"HTTP {status}: only a 2xx response is a success"
    if 300 <= status < 400:
        error = f"HTTP {status}: redirects are not followed"
    return Outcome(status, raw.decode("utf-8", errors="replace"), error, _elapsed_ms(started))


def _describe(exc: requests.RequestException) -> str:
    if isinstance(exc, requests.Timeout):
        return f"timeout: no response within {TIMEOUT_SECONDS} seconds"
    if isinstance(exc, requests.exceptions.SSLError):
        return f"tls: {exc}"
    if isinstance(exc, requests.ConnectionError):
        return f"connection failed: {exc}"
    return f"request failed: {exc}"


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
