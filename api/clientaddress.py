"""The client's address, for limits on callers without a secret key (docs/request-safety.md
"Callers without a secret key").

Without `API_TRUSTED_PROXIES` it is the socket's peer (`REMOTE_ADDR`), whatever a client writes
in a header. With it (the proxies' networks), the forwarded-for header is read from its end:
each proxy appends the address it received from, so the first address from the right that is
not a trusted proxy is the one no client could have written. IPv6 clients are counted by
their /64, the block one host is usually given.
"""

import ipaddress
from functools import cache

from django.conf import settings


@cache
def _networks(cidrs: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(cidr.strip(), strict=False) for cidr in cidrs)


def _parsed(text: str):
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _bucket(address) -> str:
    if address.version == 4:
        return str(address)
    if address.ipv4_mapped is not None:  # ::ffff:a.b.c.d, a dual-stack socket's IPv4 peer
        return str(address.ipv4_mapped)
    return str(ipaddress.ip_network(f"{address}/64", strict=False))


def client_address(request) -> str:
    """The address (or IPv6 /64) requests from one client share."""
    peer = _parsed(request.META.get("REMOTE_ADDR", ""))
    if peer is None:
        return "unknown"
    trusted = _networks(tuple(settings.API_TRUSTED_PROXIES))
    if not trusted:
        return _bucket(peer)
    header = "HTTP_" + settings.API_FORWARDED_FOR_HEADER.upper().replace("-", "_")
    hops = request.META.get(header, "").split(",")
    address = peer
    for hop in reversed(hops):
        if not any(address in network for network in trusted):
            break
        forwarded = _parsed(hop)
        if forwarded is None:  # written by a client, or no header: the proxy is the caller
            break
        address = forwarded
    return _bucket(address)
