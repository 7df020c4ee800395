"""The webhook URL guard (spec "POST /v1/webhook-endpoints", URL rules), run at creation and
again before every delivery.

Addresses are checked against the explicit tables below, not the `ipaddress` module's
`is_private` / `is_global` flags: on Python 3.11.7 those call several internal IPv6 forms
(IPv4-mapped, NAT64, 6to4, Teredo carrying a private IPv4) global. Every A and AAAA answer is
checked and one internal answer refuses the URL, and the delivery then connects to an address
that was checked, so a DNS answer that changes between check and connect (rebinding) cannot
redirect it. Numeric IPv4 spellings (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`) are
caught because they go through the resolver like any host name.

A lookup waits at most RESOLVE_TIMEOUT_SECONDS: the system resolver has no deadline of its own
that we set (glibc retries each name server for 5 s, twice), and a hostile endpoint's name
server that never answers would otherwise hold a worker thread, or a web thread creating the
endpoint, outside the attempt's deadline. The lookup runs on a pool thread that is left to
finish on its own when the wait ends.
"""

import ipaddress
import logging
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as LookupTimedOut
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from django.conf import settings

from api.errors import ValidationFailed, quoted

log = logging.getLogger(__name__)

MAX_URL_LENGTH = 2048
# What a merchant is told of an internal address: not which address, nor what kind (issue 20:
# "resolves to 127.0.0.1, a loopback address" let a merchant map the service's network
# through host names it controls). The detail is logged for the operator.
NOT_PUBLIC = "url does not resolve to a public address; webhooks go only to public addresses."

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _table(rows: list[tuple[str, str]]) -> list[tuple[ipaddress._BaseNetwork, str]]:
    """CIDR rows, most specific first, so an address reads as its narrowest block."""
    networks = [(ipaddress.ip_network(cidr), reason) for cidr, reason in rows]
    return sorted(networks, key=lambda row: -row[0].prefixlen)


BLOCKED_IPV4 = _table(
    [
        ("0.0.0.0/8", "unspecified"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "carrier-grade NAT"),  # also Alibaba's metadata 100.100.100.200
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),  # also the cloud metadata 169.254.169.254
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "reserved (IETF protocol assignments)"),  # Oracle metadata 192.0.0.192
        ("192.0.2.0/24", "reserved (documentation)"),
        ("192.88.99.0/24", "reserved (6to4 relay anycast)"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "reserved (benchmarking)"),
        ("198.51.100.0/24", "reserved (documentation)"),
        ("203.0.113.0/24", "reserved (documentation)"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),  # includes the broadcast 255.255.255.255
        ("168.63.129.16/32", "cloud metadata"),  # Azure's platform endpoint, a public address
    ]
)

BLOCKED_IPV6 = _table(
    [
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("::/96", "IPv4-compatible (deprecated)"),
        ("64:ff9b:1::/48", "NAT64 local use"),
        ("100::/64", "reserved (discard-only)"),
        ("2001::/23", "reserved (IETF protocol assignments, Teredo included)"),
        ("2001:db8::/32", "reserved (documentation)"),
        ("3fff::/20", "reserved (documentation)"),
        ("5f00::/16", "reserved (SRv6)"),
        ("fc00::/7", "unique-local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
        ("fd00:ec2::254/128", "cloud metadata"),  # AWS, inside fc00::/7
    ]
)
GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")

# IPv6 forms that carry an IPv4 address: that address must pass the IPv4 table.
IPV4_MAPPED = ipaddress.ip_network("::ffff:0:0/96")
IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
SIX_TO_FOUR = ipaddress.ip_network("2002::/16")


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 transition form carries, if it is one of them."""
    value = int(address)
    if address in IPV4_MAPPED or address in IPV4_TRANSLATED or address in NAT64:
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if address in SIX_TO_FOUR:
        return ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF)
    return None


def _first_match(address: IPAddress, table) -> str | None:
    return next((reason for network, reason in table if address in network), None)


def refusal_reason(address: IPAddress) -> str | None:
    """Why deliveries may not go to `address`, or None when it is a public address."""
    if isinstance(address, ipaddress.IPv4Address):
        return _first_match(address, BLOCKED_IPV4)
    embedded = embedded_ipv4(address)
    if embedded is not None:
        reason = refusal_reason(embedded)
        return f"{reason}, as IPv6 {address}" if reason else None
    reason = _first_match(address, BLOCKED_IPV6)
    if reason is None and address not in GLOBAL_UNICAST_V6:
        reason = "reserved (outside IPv6 global unicast)"
    return reason


def is_allowed_by_operator(address: IPAddress) -> bool:
    """WEBHOOK_ALLOWED_NETWORKS: the operator's exemption for local receivers."""
    return any(
        address.version == network.version and address in network
        for network in settings.WEBHOOK_ALLOWED_NETWORKS
    )


@dataclass(frozen=True)
class CheckedURL:
    """A URL that passed the guard, with the addresses it resolved to (all of them allowed)."""

    url: str
    host: str  # as TLS must verify it and the Host header must carry it
    port: int
    path: str  # path and query, as sent in the request line
    addresses: tuple[IPAddress, ...]


Resolver = Callable[[str, int], list[str]]


RESOLVE_TIMEOUT_SECONDS = 5.0
# Lookups left running after their wait ended hold a thread here until the resolver gives up;
# more than this at once (several hostile name servers) makes other lookups wait their turn.
_lookups = ThreadPoolExecutor(max_workers=32, thread_name_prefix="webhook-dns")


def resolve_host(host: str, port: int) -> list[str]:
    """Every A and AAAA answer for `host` (numeric spellings are parsed by the resolver);
    TimeoutError when the resolver has not answered within RESOLVE_TIMEOUT_SECONDS."""
    lookup = _lookups.submit(socket.getaddrinfo, host, port, proto=socket.IPPROTO_TCP)
    try:
        answers = lookup.result(timeout=RESOLVE_TIMEOUT_SECONDS)
    except LookupTimedOut:
        raise TimeoutError(f"no DNS answer for {host} in {RESOLVE_TIMEOUT_SECONDS:g} s") from None
    return [answer[4][0] for answer in answers]


def _invalid(message: str, code: str = "invalid_url") -> ValidationFailed:
    return ValidationFailed(message, code=code, param="url")


def parse_url(url: object) -> tuple[SplitResult, str, int]:
    """Syntax rules: -> (parts, ASCII host, port); 400 `invalid_url` / `https_required`."""
    if not isinstance(url, str) or not url:
        raise _invalid("url must be an absolute https URL.")
    if len(url) > MAX_URL_LENGTH:
        raise _invalid(f"url must be at most {MAX_URL_LENGTH} characters.")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        raise _invalid("url must not contain spaces or control characters.")
    try:
        parts = urlsplit(url)
        port = 443 if parts.port is None else parts.port  # `or 443` took :0 as 443
        host = (parts.hostname or "").encode("idna").decode("ascii") if parts.hostname else ""
    except (ValueError, UnicodeError) as exc:
        raise _invalid(f"url is not a valid URL: {quoted(str(exc))}.") from None
    if not parts.scheme or not parts.netloc:
        raise _invalid("url must be an absolute https URL, such as https://example.com/hooks.")
    if parts.scheme.lower() != "https":
        raise _invalid("url must use https.", code="https_required")
    if parts.username is not None or parts.password is not None:
        raise _invalid("url must not contain credentials.")
    if not host:
        raise _invalid("url has no host.")
    if port == 0:  # nothing listens there: a URL to refuse now, not to fail every delivery
        raise _invalid("url port must be 1-65535.")
    return parts, host, port


def check_url(url: object, *, resolve: Resolver = resolve_host) -> CheckedURL:
    """Apply every URL rule; raise the spec's 400 codes, or return where to connect."""
    parts, host, port = parse_url(url)
    try:
        answers = resolve(host.strip("[]"), port)
    except TimeoutError:
        raise _invalid(
            f"url host {quoted(host)} did not resolve within {RESOLVE_TIMEOUT_SECONDS:g} s.",
            code="unresolvable_host",
        ) from None
    except (OSError, UnicodeError):
        answers = []
    if not answers:
        raise _invalid(f"url host {quoted(host)} does not resolve.", code="unresolvable_host")
    addresses = tuple(dict.fromkeys(ipaddress.ip_address(a.split("%", 1)[0]) for a in answers))
    for address in addresses:
        reason = None if is_allowed_by_operator(address) else refusal_reason(address)
        if reason:
            log.info(
                "webhook url refused: host %s resolves to %s, a %s address", host, address, reason
            )
            raise _invalid(NOT_PUBLIC, code="private_address")
    return CheckedURL(url=url, host=host, port=port, path=_request_path(parts), addresses=addresses)


def _request_path(parts: SplitResult) -> str:
    """Path and query as the request line carries them (the fragment is never sent)."""
    path = parts.path or "/"
    return f"{path}?{parts.query}" if parts.query else path
