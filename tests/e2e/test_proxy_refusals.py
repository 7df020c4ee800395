"""deploy/haproxy.cfg as it is written refuses, itself, a source address that the service
refused for want of a valid key more than 40 times in 10 s (401, or the address bucket's 429
marked `X-RateLimit-Scope: address`), and a key the service refused over its own rate as
often (`X-RateLimit-Scope: key`), and passes the service the address it received from
(docs/production.md "The proxy", issue 20: a flood of made-up live keys cost Python in the
processes serving live payments, one refusal at a time). The live pool is a stand-in whose
answer the key chooses; each 127.x.y.z is another source address of this host."""

import json
import time

import pytest

from tests.e2e.standins import Pool, get

VALID = "svc_sk_live_" + "v" * 20
OVER_ITS_ADDRESS = "svc_sk_live_" + "a" * 20  # answered the address bucket's 429
OVER_ITS_RATE = "svc_sk_live_" + "r" * 20  # answered its own rate's 429
UNSCOPED = "svc_sk_live_" + "u" * 20  # answered a 429 of no limit the proxy counts
ATTACKER, OTHER = "127.0.0.7", "127.0.0.8"
THRESHOLD = 40  # refusals in 10 s (deploy/haproxy.cfg)


def answer(headers: dict) -> tuple[int, dict, str]:
    key = headers.get("authorization", "").removeprefix("Bearer ")
    if key == VALID:
        return 200, {}, headers.get("x-forwarded-for", "")
    if key == OVER_ITS_ADDRESS:
        return 429, {"Retry-After": "1", "X-RateLimit-Scope": "address"}, "{}"
    if key == OVER_ITS_RATE:
        return 429, {"Retry-After": "1", "X-RateLimit-Scope": "key"}, "{}"
    if key == UNSCOPED:
        return 429, {"Retry-After": "1"}, "{}"
    return 401, {}, "{}"


@pytest.fixture
def live():
    pool = Pool("live", answer)
    yield pool
    pool.stop()


def flood(port: int, key: str, count: int) -> list[int]:
    return [get(port, key, source=ATTACKER)[0] for _ in range(count)]


@pytest.mark.parametrize("key", ["svc_sk_live_" + "m" * 20, OVER_ITS_ADDRESS])
def test_a_source_refused_for_its_keys_is_then_refused_by_the_proxy(live, proxy_for, key):
    port = proxy_for(live, None).port
    before = live.served
    statuses = flood(port, key, THRESHOLD + 3)
    reached = live.served - before
    # The rate is a sliding estimate: the proxy takes over at the threshold, give or take one.
    assert THRESHOLD <= reached <= THRESHOLD + 2
    assert statuses[reached:] == [429] * (len(statuses) - reached)
    started = time.monotonic()
    status, headers, body = get(port, VALID, source=ATTACKER)  # whatever it sends now
    assert time.monotonic() - started >= 0.9  # held for `timeout tarpit` (1 s) first
    assert (status, headers["Retry-After"]) == (429, "10")
    assert json.loads(body)["error"]["code"] == "rate_limit_exceeded"
    assert live.served - before == reached
    assert get(port, VALID, source=OTHER)[0] == 200  # other sources are served


def test_a_key_refused_over_its_own_rate_is_then_refused_by_the_proxy(live, proxy_for):
    """Issue 20: a test key's worst-case bodies, 2,400 refused in 9 s, each carried in whole
    through the service to be refused. The key is refused at the proxy; its address's other
    keys are served, and its refusals do not count against the address."""
    port = proxy_for(live, None).port
    before = live.served
    statuses = flood(port, OVER_ITS_RATE, THRESHOLD + 3)
    reached = live.served - before
    assert THRESHOLD <= reached <= THRESHOLD + 2
    assert statuses[reached:] == [429] * (len(statuses) - reached)
    started = time.monotonic()
    status, headers, body = get(port, OVER_ITS_RATE, source=OTHER)  # from anywhere
    assert time.monotonic() - started >= 0.9
    assert (status, headers["Retry-After"], headers["X-RateLimit-Scope"]) == (429, "10", "key")
    assert json.loads(body)["error"]["message"].startswith("Too many requests with this API key")
    assert live.served - before == reached
    assert get(port, VALID, source=ATTACKER)[0] == 200


def test_refusals_the_proxy_does_not_count(live, proxy_for):
    """Answers without a scope (a concurrency budget's, a shed request's) are the service's
    to give, request by request."""
    port = proxy_for(live, None).port
    before = live.served
    assert set(flood(port, UNSCOPED, THRESHOLD + 10)) == {429}
    assert live.served - before == THRESHOLD + 10


def test_the_service_is_told_the_address_the_proxy_received_from(live, proxy_for):
    """Appended after whatever the client wrote: API_TRUSTED_PROXIES reads it from the end."""
    port = proxy_for(live, None).port
    status, _, forwarded = get(port, VALID, source=OTHER, headers={"X-Forwarded-For": "6.6.6.6"})
    assert (status, forwarded) == (200, f"6.6.6.6, {OTHER}")
