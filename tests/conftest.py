"""Shared fixtures: a merchant with its four keys, an outsider, a DRF client per key kind, and
Redis (real, or sick behind a proxy) as the cache and rate-limit store."""

import uuid

import pytest
from django.contrib.auth.models import User
from django.db import connection
from rest_framework.test import APIClient

from accounts.services import merchant_create
from admission import buckets, store
from api import ids, request_recorder
from infra import breaker
from tests.racing import Api
from tests.sick import HANG, Proxy
from tests.support.clock import T0


@pytest.fixture(autouse=True)
def ids_from_the_real_clock():
    """Each test's ids start from the real clock: after a test that travelled ahead in time,
    api.ids would keep that moment (as it does when a clock steps back), and windows written
    through the id (request logs, payments) would miss what the test then makes."""
    ids._last_ms = -1


def key_client(secret: str | None) -> APIClient:
    client = APIClient()
    if secret:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.fixture
def new_merchant(db):
    """The merchant under test, with `.keys[mode][kind].secret` for its four keys."""
    return merchant_create(name="Acme Ltd", email="owner@acme.test")


@pytest.fixture
def merchant(new_merchant):
    return new_merchant.merchant


@pytest.fixture
def other_new_merchant(db):
    """The outsider: must get 404 for everything the merchant owns."""
    return merchant_create(name="Other Co", email="owner@other.test")


@pytest.fixture
def other_merchant(other_new_merchant):
    return other_new_merchant.merchant


@pytest.fixture
def api(new_merchant):
    """Test-mode secret key: what a merchant's server uses in test mode."""
    return key_client(new_merchant.keys["test"]["secret"].secret)


@pytest.fixture
def publishable_api(new_merchant):
    return key_client(new_merchant.keys["test"]["publishable"].secret)


@pytest.fixture
def live_api(new_merchant):
    return key_client(new_merchant.keys["live"]["secret"].secret)


@pytest.fixture
def live_publishable_api(new_merchant):
    return key_client(new_merchant.keys["live"]["publishable"].secret)


@pytest.fixture
def other_api(other_new_merchant):
    return key_client(other_new_merchant.keys["test"]["secret"].secret)


@pytest.fixture
def staff_client(client, db):
    """A support person logged in to the admin."""
    # force_login: the login throttle (django-axes) needs the request that client.login lacks.
    client.force_login(
        User.objects.create_superuser(
            "support", "support@example.test", "a long and unlikely passphrase"
        )
    )
    return client


@pytest.fixture
def anonymous_api():
    return key_client(None)


@pytest.fixture
def http(live_server, new_merchant):
    """The merchant's test secret key against a live server: for real parallel requests."""
    return Api(live_server.url, new_merchant.keys["test"]["secret"].secret)


def redis_store(location: str) -> dict:
    # A prefix per test: a bump committed by a test running in parallel (another xdist
    # worker) cannot invalidate the entries this test counts on.
    return {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": location,
        "KEY_PREFIX": uuid.uuid4().hex,
    }


@pytest.fixture
def redis(settings):
    """Redis as the cache, under a prefix of this test's own."""
    if not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not set: the test needs Redis")
    settings.CACHES = {**settings.CACHES, "default": redis_store(settings.REDIS_URL)}


def on_postgres() -> bool:
    return connection.vendor == "postgresql"


def pytest_collection_modifyitems(config, items):
    """Tests marked `postgres` need PostgreSQL itself (row locks, its indexes, its commit
    settings); on the embedded SQLite they are skipped."""
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        return
    skip = pytest.mark.skip(
        reason="needs PostgreSQL (row locks or its own SQL); running on embedded SQLite"
    )
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def without_redis(settings):
    """The cache on local memory, as on the embedded defaults."""
    settings.CACHES = {
        **settings.CACHES,
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }


@pytest.fixture(autouse=True)
def dependencies_presumed_up():
    """Every test starts with no outage remembered (infra/breaker.py) and its own first
    rate-limiter warning."""
    breaker.close_all()
    store.forget_warnings()
    buckets.forget_refusals()


@pytest.fixture
def sick_redis(settings):
    """A proxy in front of the test's Redis, hanging until the test calls `.set_mode(FORWARD)`."""
    if not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not set: the proxy forwards to a real Redis")
    proxy = Proxy(settings.REDIS_URL, mode=HANG)
    yield proxy
    proxy.close()


def redis_cache_at(settings, url: str) -> None:
    """Redis at `url` as the cache and rate-limit store, with the project's client options
    (REDIS_TIMEOUT) and a prefix of the test's own."""
    store = {**redis_store(url), "OPTIONS": settings.REDIS_CLIENT_OPTIONS}
    settings.CACHES = {**settings.CACHES, "default": store}
    settings.API_RATE_LIMIT_CACHE = "default"


@pytest.fixture(autouse=True)
def _empty_request_log_queue():
    """Each test's request log starts empty (settings_test: no writer thread; a test that
    reads the log flushes it on its own connection)."""
    request_recorder.writer.clear()


@pytest.fixture
def clock(time_machine):
    """Time stopped at T0 (tests/support/clock.py); `clock.shift(...)` moves it on."""
    time_machine.move_to(T0, tick=False)
    return time_machine


@pytest.fixture(scope="session")
def _localstripe_process():
    from tests.support.localstripe import running_localstripe

    with running_localstripe() as emulator:
        yield emulator


@pytest.fixture
def localstripe(_localstripe_process):
    """The Stripe emulator (tests/support/localstripe.py), its store empty."""
    _localstripe_process.flush()
    return _localstripe_process
