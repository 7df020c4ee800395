"""Redis sick in the request path: the rate limiter goes without it (the configuration
revision is in PostgreSQL), a hung Redis costs one REDIS_TIMEOUT per DEPENDENCY_RETRY_SECONDS
(infra/breaker.py), and everything works again once it answers (docs/dependencies.md). A hung
Redis is a proxy that accepts and never answers (tests/sick.py); whether a request touched it
is counted in the connections the proxy accepted, not timed."""

import datetime
import logging

import pytest
from django.utils import timezone

from tests.conftest import redis_cache_at
from tests.sick import CLOSED_PORT_URL, FORWARD


@pytest.fixture
def hung_redis(sick_redis, settings, time_machine):
    """The cache and the rate limiter on a Redis that hangs; time frozen until shifted."""
    redis_cache_at(settings, sick_redis.url)
    settings.API_RATE_LIMITS = {"test": {"rate": 1, "burst": 3}, "live": {"rate": 1, "burst": 3}}
    time_machine.move_to(timezone.now(), tick=False)
    return sick_redis


def payments_list(api) -> int:
    return api.get("/v1/payments").status_code


def test_with_redis_hung_requests_are_served_and_touch_it_once_per_interval(api, hung_redis):
    assert payments_list(api) == 200
    tried = hung_redis.accepted
    assert tried == 1  # the rate limiter's call timed out
    assert [payments_list(api) for _ in range(5)] == [200] * 5
    assert hung_redis.accepted == tried  # the breaker answered: no socket, no wait


def test_the_breaker_closes_when_redis_answers_again(api, hung_redis, settings, time_machine):
    payments_list(api)
    hung_redis.set_mode(FORWARD)  # Redis is back...
    assert [payments_list(api) for _ in range(4)] == [200] * 4  # ...but not tried yet: no limit
    assert hung_redis.accepted == 1
    time_machine.shift(datetime.timedelta(seconds=settings.DEPENDENCY_RETRY_SECONDS))
    # The interval is over: the next request tries Redis, which answers; limits apply again.
    assert [payments_list(api) for _ in range(4)] == [200, 200, 200, 429]
    assert hung_redis.accepted == 2


def test_with_redis_hung_a_trial_that_fails_opens_the_breaker_again(
    api, hung_redis, settings, time_machine
):
    payments_list(api)
    time_machine.shift(datetime.timedelta(seconds=settings.DEPENDENCY_RETRY_SECONDS))
    assert [payments_list(api) for _ in range(3)] == [200] * 3
    assert hung_redis.accepted == 2  # one trial per interval


def test_rate_limiting_fails_open_with_one_warning_and_no_traceback(api, settings, caplog):
    redis_cache_at(settings, CLOSED_PORT_URL)
    settings.API_RATE_LIMITS = {"test": {"rate": 1, "burst": 1}, "live": {"rate": 1, "burst": 1}}
    with caplog.at_level(logging.WARNING):
        assert [payments_list(api) for _ in range(10)] == [200] * 10
    warnings = [r for r in caplog.records if r.name in ("admission", "infra.breaker")]
    assert [r.name for r in warnings] == ["infra.breaker", "admission"]
    assert "Redis at 127.0.0.1:1 unavailable" in warnings[0].getMessage()
    assert not any(r.exc_info for r in caplog.records)
