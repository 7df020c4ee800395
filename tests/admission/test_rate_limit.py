"""Per-key rate limits: token buckets in Redis (Lua, on Redis's clock) or the local-memory
cache (on the process's)."""

import datetime
import os
import uuid

import pytest
from django.core.cache import caches
from django.utils import timezone

from api.models import IdempotencyRecord
from tests.api.test_conventions import error_of
from tests.test_settings import import_settings

pytestmark = pytest.mark.urls("tests.support.urls")

ECHO = {"amount": 100, "currency": "eur"}
STORES = {
    "redis": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": os.environ.get("REDIS_URL", ""),
        "KEY_PREFIX": "",  # one of the test's own, below
    },
    "locmem": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "rl"},
}


class Clock:
    """Time passing for the buckets: the process's clock (frozen) and, in Redis, each bucket's
    last take moved back as far (Redis's own clock cannot be moved)."""

    def __init__(self, time_machine, store: str, prefix: str):
        self.time_machine, self.store, self.prefix = time_machine, store, prefix

    def shift(self, delta: datetime.timedelta) -> None:
        self.time_machine.shift(delta)
        if self.store != "redis":
            return
        client = caches["ratelimit"]._cache.get_client(write=True)
        for key in client.scan_iter(f"{self.prefix}:*ratelimit:*"):
            at = float(client.hget(key, "at"))
            client.hset(key, "at", repr(at - delta.total_seconds()))


@pytest.fixture(params=sorted(STORES))
def limits(request, settings, time_machine):
    """A bucket store per run (in Redis under a prefix of the test's own), frozen time, and
    limits a test can reach: test mode 2 at once refilling 1 every 2 s; live mode 3 at once."""
    if not STORES[request.param]["LOCATION"]:
        pytest.skip("REDIS_URL is not set: the Redis bucket needs a Redis server")
    prefix = uuid.uuid4().hex
    store = {**STORES[request.param], "KEY_PREFIX": prefix}
    settings.CACHES = {**settings.CACHES, "ratelimit": store}
    settings.API_RATE_LIMIT_CACHE = "ratelimit"
    settings.API_RATE_LIMITS = {"test": {"rate": 0.5, "burst": 2}, "live": {"rate": 1, "burst": 3}}
    time_machine.move_to(timezone.now(), tick=False)
    return Clock(time_machine, request.param, prefix)


def echo(client, **extra):
    return client.post("/v1/test/echo", ECHO, format="json", **extra)


def test_over_the_limit_is_429_with_retry_after(api, limits):
    assert [echo(api).status_code for _ in range(2)] == [201, 201]
    response = echo(api)
    error_of(response, 429, "rate_limit_error", "rate_limit_exceeded")
    assert response["Retry-After"] == "2"
    assert response["X-RateLimit-Scope"] == "key"  # the proxy counts them per key


def test_tokens_refill_over_time(api, limits):
    for _ in range(2):
        echo(api)
    limits.shift(datetime.timedelta(seconds=1))
    assert echo(api).status_code == 429
    assert echo(api)["Retry-After"] == "1"
    limits.shift(datetime.timedelta(seconds=1))
    assert echo(api).status_code == 201
    assert echo(api).status_code == 429


def test_a_node_clock_ahead_does_not_refill_the_bucket(api, limits, time_machine):
    """Issue 21: two nodes share the bucket, one's clock 3 s ahead of the other's. Each take
    on the node ahead used to see 3 s of refill (1.5 tokens): every request was allowed."""
    if limits.store != "redis":
        pytest.skip("a local bucket lives in one process, on one clock")
    statuses = []
    for node_ahead in [False, True] * 4:
        time_machine.shift(datetime.timedelta(seconds=3 if node_ahead else -3))
        statuses.append(echo(api).status_code)
    assert statuses[:2] == [201, 201]
    assert set(statuses[2:]) == {429}


def test_buckets_are_per_key_and_limits_per_mode(api, other_api, live_api, limits):
    for _ in range(2):
        echo(api)
    assert echo(api).status_code == 429
    assert echo(other_api).status_code == 201
    assert [echo(live_api).status_code for _ in range(4)] == [201, 201, 201, 429]


def test_the_limit_comes_before_the_guard(api, limits):
    for _ in range(2):
        echo(api)
    response = api.post("/v1/test/echo", {"number": "4242424242424242"}, format="json")
    error_of(response, 429, "rate_limit_error", "rate_limit_exceeded")


def test_a_rate_limited_request_is_not_stored(api, limits):
    for _ in range(2):
        echo(api)
    limited = echo(api, HTTP_IDEMPOTENCY_KEY="later")
    assert limited.status_code == 429
    assert not IdempotencyRecord.objects.exists()
    limits.shift(datetime.timedelta(seconds=2))
    response = echo(api, HTTP_IDEMPOTENCY_KEY="later")
    assert response.status_code == 201 and "Idempotent-Replayed" not in response


def test_requests_are_served_when_redis_is_down(api, settings, caplog):
    settings.CACHES = {
        **settings.CACHES,
        "ratelimit": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens on port 1
        },
    }
    settings.API_RATE_LIMIT_CACHE = "ratelimit"
    assert echo(api).status_code == 201
    assert "rate limiter and concurrency budgets unavailable" in caplog.text


@pytest.mark.parametrize("name", ["API_RATE_LIMIT_LIVE_RATE", "API_RATE_LIMIT_TEST_BURST"])
def test_a_limit_that_would_refuse_everything_refuses_to_start(name):
    result = import_settings(DEBUG="true", **{name: "0"})
    assert result.returncode != 0
    assert "API_RATE_LIMIT_" in result.stderr


def test_a_large_body_takes_more_tokens(api, limits, settings):
    """Cost 1 + 2 = 3 with 1 KiB a unit, lowered to the burst of 2: the large body empties
    the bucket a small one would have left half full."""
    settings.API_COST_BYTES = 1024
    large = {**ECHO, "metadata": {f"k{n}": "v" * 400 for n in range(5)}}  # > 2 KiB
    assert api.post("/v1/test/echo", large, format="json").status_code == 201
    response = echo(api)
    error_of(response, 429, "rate_limit_error", "rate_limit_exceeded")
    assert response["Retry-After"] == "2"
