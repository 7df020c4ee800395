"""Callers without a valid secret key (none, malformed, unknown, publishable) are limited per
client address, not per key (issue 20 item 6): a publishable key is public, so whoever drains
its bucket from one address must not refuse the merchant's customers at others; made-up keys
are refused before the database is asked once their address is over its limit."""

import pytest
from django.test import RequestFactory

from accounts import keys
from admission.address import client_address
from api.ids import new_id
from tests.api.test_conventions import error_of
from tests.conftest import redis_store

pytestmark = [pytest.mark.urls("tests.support.urls"), pytest.mark.django_db]

ATTACKER, CUSTOMER = "203.0.113.7", "198.51.100.20"
UNKNOWN = "svc_sk_test_" + "A" * 20


def counters_in(kind: str, settings) -> None:
    """Admission's counters in a store of the test's own: Redis, or this process's memory."""
    if kind == "redis" and not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not set")
    store = (
        redis_store(settings.REDIS_URL)
        if kind == "redis"
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": new_id("x")}
    )
    settings.CACHES = {**settings.CACHES, "ratelimit": store}
    settings.API_RATE_LIMIT_CACHE = "ratelimit"


@pytest.fixture(params=["redis", "locmem"])
def low_limits(request, settings, time_machine):
    """A bucket store of the test's own; 2 requests at once per address and per key, refilled
    1 every 2 s (the process's clock frozen)."""
    counters_in(request.param, settings)
    settings.API_ADDRESS_RATE_LIMIT = {"rate": 0.5, "burst": 2}
    limit = {"rate": 0.5, "burst": 2}
    settings.API_RATE_LIMITS = {"test": limit, "live": limit}
    time_machine.move_to("2026-11-25T00:00:00Z", tick=False)


def from_(address: str, **extra) -> dict:
    return {"REMOTE_ADDR": address, **extra}


def test_a_drained_publishable_key_still_serves_other_addresses(publishable_api, low_limits):
    statuses = [publishable_api.get("/v1/test/publishable", **from_(ATTACKER)).status_code]
    statuses += [publishable_api.get("/v1/test/publishable", **from_(ATTACKER)).status_code]
    refused = publishable_api.get("/v1/test/publishable", **from_(ATTACKER))
    assert statuses == [200, 200]
    error_of(refused, 429, "rate_limit_error", "rate_limit_exceeded")
    assert refused["Retry-After"] == "2"
    customers = [
        publishable_api.get("/v1/test/publishable", **from_(CUSTOMER)).status_code for _ in range(2)
    ]
    assert customers == [200, 200]


def test_unknown_keys_are_limited_per_address_and_then_cost_no_query(
    anonymous_api, low_limits, django_assert_num_queries
):
    anonymous_api.credentials(HTTP_AUTHORIZATION=f"Bearer {UNKNOWN}")
    first = [anonymous_api.get("/v1/test/keys", **from_(ATTACKER)) for _ in range(2)]
    assert [response.status_code for response in first] == [401, 401]
    refused = anonymous_api.get("/v1/test/keys", **from_(ATTACKER))
    error_of(refused, 429, "rate_limit_error", "rate_limit_exceeded")
    with django_assert_num_queries(0):
        refused = anonymous_api.get("/v1/test/keys", **from_(ATTACKER))
    assert refused.status_code == 429
    assert anonymous_api.get("/v1/test/keys", **from_(CUSTOMER)).status_code == 401


def test_the_address_refusals_are_marked_for_the_proxy(anonymous_api, low_limits):
    """deploy/haproxy.cfg counts them per source with the 401s (docs/production.md "The proxy"):
    a source refused for want of a valid key is then refused by the proxy, before Python."""
    anonymous_api.credentials(HTTP_AUTHORIZATION=f"Bearer {UNKNOWN}")
    answers = [anonymous_api.get("/v1/test/keys", **from_(ATTACKER)) for _ in range(4)]
    assert [answer.status_code for answer in answers] == [401, 401, 429, 429]
    assert [answer.get("X-RateLimit-Scope") for answer in answers] == [
        None,
        None,
        "address",
        "address",  # the second refused before the query, by the process's memory
    ]


def test_a_refused_address_is_refused_before_the_url_is_resolved(anonymous_api, low_limits):
    """Its made-up keys cost no URL resolution and no DRF (admission.pipeline's step 2,
    AdmissionMiddleware): even an unknown path answers the address's 429, not the 404."""
    anonymous_api.credentials(HTTP_AUTHORIZATION=f"Bearer {UNKNOWN}")
    for _ in range(3):
        anonymous_api.get("/v1/test/keys", **from_(ATTACKER))
    refused = anonymous_api.get("/v1/no-such-path", **from_(ATTACKER))
    error_of(refused, 429, "rate_limit_error", "rate_limit_exceeded")
    assert refused["X-RateLimit-Scope"] == "address"
    assert anonymous_api.get("/v1/no-such-path", **from_(CUSTOMER)).status_code == 404
    preflight = anonymous_api.options(
        "/v1/test/keys",
        HTTP_ORIGIN="https://shop.example",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET",
        **from_(ATTACKER),
    )
    assert preflight.status_code != 429  # a browser's preflight carries no key: not refused


@pytest.mark.parametrize("header", [None, "Basic abc", "Bearer not-a-key"])
def test_requests_without_a_key_are_limited_per_address(anonymous_api, low_limits, header):
    if header:
        anonymous_api.credentials(HTTP_AUTHORIZATION=header)
    statuses = [anonymous_api.get("/v1/test/keys", **from_(ATTACKER)).status_code for _ in range(3)]
    assert statuses == [401, 401, 429]


@pytest.mark.postgres  # keys are cached under the configuration revision, kept in PostgreSQL
def test_a_known_secret_key_is_not_refused_by_its_address(api, anonymous_api, low_limits):
    """A key the process has looked up before is served; one it would have to look up in the
    database waits with the made-up ones (the price of not querying for them)."""
    assert api.get("/v1/test/keys", **from_(CUSTOMER)).status_code == 200
    anonymous_api.credentials(HTTP_AUTHORIZATION=f"Bearer {UNKNOWN}")
    for _ in range(3):
        anonymous_api.get("/v1/test/keys", **from_(ATTACKER))
    assert api.get("/v1/test/keys", **from_(ATTACKER)).status_code == 200


@pytest.mark.postgres
def test_an_address_in_good_standing_has_its_key_hashed_once(api, monkeypatch):
    """Step 2 asks whether the address is known empty before it hashes the key (issue 33): a
    request from an address never refused hashes its key once, in authentication."""
    assert api.get("/v1/test/keys", **from_(CUSTOMER)).status_code == 200  # the key cached
    hashed = []
    real_hash_key = keys.hash_key
    monkeypatch.setattr(keys, "hash_key", lambda *args: hashed.append(1) or real_hash_key(*args))
    assert api.get("/v1/test/keys", **from_(CUSTOMER)).status_code == 200
    assert len(hashed) == 1


# --- which address --------------------------------------------------------------------------


def request_from(remote: str, forwarded: str | None = None):
    extra = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {}
    return RequestFactory().get("/v1/payments", REMOTE_ADDR=remote, **extra)


def test_without_trusted_proxies_a_forwarded_header_is_ignored(settings):
    settings.API_TRUSTED_PROXIES = []
    assert client_address(request_from("203.0.113.7", "198.51.100.1")) == "203.0.113.7"


@pytest.mark.parametrize(
    ("remote", "forwarded", "expected"),
    [
        ("10.0.0.2", "198.51.100.1", "198.51.100.1"),  # the proxy's peer
        ("10.0.0.2", "6.6.6.6, 198.51.100.1", "198.51.100.1"),  # the client's own claim: no
        ("10.0.0.2", "198.51.100.1, 10.0.0.3", "198.51.100.1"),  # through two proxies
        ("203.0.113.7", "198.51.100.1", "203.0.113.7"),  # not from a proxy: its own address
        ("10.0.0.2", "garbage", "10.0.0.2"),  # nothing readable: the proxy
        ("10.0.0.2", None, "10.0.0.2"),
    ],
)
def test_behind_trusted_proxies_the_address_they_received_from(
    settings, remote, forwarded, expected
):
    settings.API_TRUSTED_PROXIES = ["10.0.0.0/8"]
    assert client_address(request_from(remote, forwarded)) == expected


def test_ipv6_clients_share_their_64(settings):
    settings.API_TRUSTED_PROXIES = []
    one = client_address(request_from("2001:db8:1:2::10"))
    assert one == client_address(request_from("2001:db8:1:2:ffff::1")) == "2001:db8:1:2::/64"
    assert client_address(request_from("::ffff:203.0.113.7")) == "203.0.113.7"


def test_a_large_body_takes_more_of_its_addresss_tokens(publishable_api, low_limits, settings):
    """Issue 35: many addresses, each under its rate, sent a publishable key's 256 KiB bodies;
    each costs its address what it costs a key's bucket (1 + one per API_COST_BYTES)."""
    settings.API_ADDRESS_RATE_LIMIT = {"rate": 0.5, "burst": 4}
    body = b'{"pad": "' + b"x" * (3 * settings.API_COST_BYTES) + b'"}'  # costs 4

    def post():
        return publishable_api.post(
            "/v1/sandbox/tokens", body, content_type="application/json", **from_(ATTACKER)
        )

    assert post().status_code != 429
    refused = post()
    error_of(refused, 429, "rate_limit_error", "rate_limit_exceeded")
    assert (refused["X-RateLimit-Scope"], refused["Retry-After"]) == ("address", "8")
    assert publishable_api.get("/v1/test/publishable", **from_(CUSTOMER)).status_code == 200
