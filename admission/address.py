"""The client's address, and its bucket: the limit on callers without a valid secret key
(docs/admission.md "Callers without a secret key").

Without `API_TRUSTED_PROXIES` it is the socket's peer (`REMOTE_ADDR`), whatever a client writes
in a header. With it (the proxies' networks), the forwarded-for header is read from its end:
each proxy appends the address it received from, so the first address from the right that is
not a trusted proxy is the one no client could have written. IPv6 clients are counted by
their /64, the block one host is usually given.
"""

import ipaddress
import math
from collections.abc import Callable
from functools import cache

from django.conf import settings

from admission import buckets, budgets, store
from api.errors import RATE_LIMIT_SCOPE_HEADER, RateLimited


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


def _address_bucket(request) -> str:
    return f"address:{client_address(request)}"


def refuse_over_address_limit(request) -> None:
    """Callers without a secret key (none, a malformed or unknown one, a publishable one) share
    one bucket per client address (settings.API_ADDRESS_RATE_LIMIT): 429 when it is empty. A
    publishable key is public by design, so its own bucket would be anyone's to drain. A large
    body takes more tokens, as from a key's bucket (its view is not known yet: its body alone)."""
    limits = settings.API_ADDRESS_RATE_LIMIT
    cost = budgets.request_cost(request, view=None)
    try:
        wait = buckets.take_token(
            _address_bucket(request), rate=limits["rate"], burst=limits["burst"], cost=cost
        )
    except store.STORE_UNAVAILABLE as error:
        store.warn_failing_open("rate limiter", error)
        return
    if wait > 0:
        raise address_refusal(wait)


def refuse_refused_address(request, excused: Callable[[], bool] = lambda: False) -> None:
    """429 at once, with no round trip, while this process knows the address's bucket to be
    empty: asked before a key is looked up in the database, so a flood of made-up keys costs
    no query. `excused()`, asked only for such an address, lets the request through all the
    same (admission's step 2: a key in the key cache, whose HMAC an address in good standing
    does not pay there)."""
    wait = buckets.known_empty_for(_address_bucket(request))
    if wait > 0 and not excused():
        raise address_refusal(wait)


def address_refusal(wait: float) -> RateLimited:
    """The address's 429 (the proxy's too: admission.proxy)."""
    seconds = max(1, math.ceil(wait))
    return RateLimited(
        f"Too many requests from this address without a valid secret key; retry in {seconds} s.",
        headers={"Retry-After": str(seconds), RATE_LIMIT_SCOPE_HEADER: "address"},
    )
