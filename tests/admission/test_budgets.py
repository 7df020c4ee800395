"""A merchant's concurrency budget per mode, with a cost per request, and the load shedder
that keeps a process's last threads for live keys (issue 20 item 4; admission/budgets.py,
admission/shedding.py)."""

import threading
import time

import pytest
from django.core.cache import caches
from django.db import connection

from admission import buckets, budgets, shedding
from api.ids import new_id
from tests.api.test_conventions import error_of
from tests.conftest import key_client, redis_store
from tests.test_settings import import_settings

pytestmark = [pytest.mark.urls("tests.support.urls"), pytest.mark.django_db(transaction=True)]

ECHO = {"amount": 100, "currency": "eur"}


@pytest.fixture(params=["redis", "locmem"])
def store(request, settings):
    """The budgets' store of the test's own: Redis under a prefix, or a local-memory cache."""
    if request.param == "redis" and not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not set")
    settings.CACHES = {
        **settings.CACHES,
        "budgets": redis_store(settings.REDIS_URL)
        if request.param == "redis"
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": new_id("x")},
    }
    settings.API_RATE_LIMIT_CACHE = "budgets"
    return request.param


def echo(client, body=ECHO):
    return client.post("/v1/test/echo", body, format="json")


def test_a_large_body_costs_more_of_the_budget(api, merchant, settings, store):
    settings.API_CONCURRENCY_LIMITS = {"test": 3, "live": 3}
    settings.API_COST_BYTES = 1024
    large = {**ECHO, "metadata": {f"k{n}": "v" * 400 for n in range(5)}}  # > 2 KiB: cost 3
    held = budgets.hold(budgets.merchant_scope(merchant.id, "test", 2))
    try:
        assert echo(api).status_code == 201  # 2 + 1 <= 3
        refused = echo(api, large)  # 2 + 3 > 3
        error_of(refused, 429, "rate_limit_error", "rate_limit_exceeded")
        assert refused["Retry-After"] == "1"
        assert "costs 3" in refused.json()["error"]["message"]
    finally:
        held.release()
    assert echo(api, large).status_code == 201
    huge = {**ECHO, "metadata": {f"k{n}": "v" * 450 for n in range(40)}}  # cost 18: lowered to 3
    assert echo(api, huge).status_code == 201  # alone, the dearest request still runs


def test_an_inline_delivery_costs_more_of_the_budget(api, merchant, settings, store):
    """simulate-webhook delivers while its request waits: it costs 4 units (here lowered to
    the budget of 3), so one unit held by anything else refuses it, before any work."""
    settings.API_CONCURRENCY_LIMITS = {"test": 3, "live": 3}
    held = budgets.hold(budgets.merchant_scope(merchant.id, "test"))
    try:
        refused = api.post("/v1/sandbox/simulate-webhook", {}, format="json")
        error_of(refused, 429, "rate_limit_error", "rate_limit_exceeded")
        assert echo(api).status_code == 201
    finally:
        held.release()


def test_budgets_are_per_merchant_and_mode(api, live_api, other_api, merchant, settings, store):
    settings.API_CONCURRENCY_LIMITS = {"test": 1, "live": 1}
    held = budgets.hold(budgets.merchant_scope(merchant.id, "test"))
    try:
        assert echo(api).status_code == 429
        assert echo(live_api).status_code == 201
        assert echo(other_api).status_code == 201
    finally:
        held.release()


def test_a_publishable_keys_requests_have_a_budget_of_their_own(
    api, publishable_api, merchant, settings, store
):
    """Issue 20: the publishable key is public; a flood of it from many addresses, each under
    its address's rate, held the units the merchant's own servers need."""
    settings.API_CONCURRENCY_LIMITS = {"test": 1, "live": 1}
    held = budgets.hold(budgets.merchant_scope(merchant.id, "test", publishable=True))
    try:
        assert publishable_api.get("/v1/test/publishable").status_code == 429
        assert echo(api).status_code == 201
    finally:
        held.release()
    held = budgets.hold(budgets.merchant_scope(merchant.id, "test"))
    try:
        assert publishable_api.get("/v1/test/publishable").status_code == 200
    finally:
        held.release()


def test_a_request_that_fails_gives_its_units_back(api, settings, store):
    settings.API_CONCURRENCY_LIMITS = {"test": 1, "live": 1}
    api.raise_request_exception = False
    assert [api.get("/v1/test/boom").status_code for _ in range(2)] == [500, 500]
    assert echo(api).status_code == 201


def test_a_key_short_of_tokens_takes_no_units(merchant, settings, store):
    """The key's tokens and the units in one round trip (hold_after_tokens): a bucket that
    is short answers its wait and leaves the budget as it was."""
    settings.API_CONCURRENCY_LIMITS = {"test": 1, "live": 1}
    scope = budgets.merchant_scope(merchant.id, "test")
    take = buckets.Take(new_id("key"), rate=0.001, burst=1)
    wait, held = budgets.hold_after_tokens(take, scope)
    assert wait == 0 and held is not None
    held.release()
    wait, held = budgets.hold_after_tokens(take, scope)
    assert wait > 900 and held is None
    budgets.hold(scope).release()  # the one unit is free: the short request took none


def test_a_request_the_budget_refuses_has_spent_its_tokens(merchant, settings, store):
    """As when the bucket and the budget were asked one after the other."""
    settings.API_CONCURRENCY_LIMITS = {"test": 1, "live": 1}
    scope = budgets.merchant_scope(merchant.id, "test")
    take = buckets.Take(new_id("key"), rate=0.001, burst=2)
    held = budgets.hold(scope)
    try:
        with pytest.raises(budgets.Refused):
            budgets.hold_after_tokens(take, scope)
    finally:
        held.release()
    wait, held = budgets.hold_after_tokens(take, scope)  # the second token
    assert wait == 0
    held.release()
    assert budgets.hold_after_tokens(take, scope)[0] > 900


def test_units_of_a_process_that_died_expire(api, merchant, settings):
    """Expiry on Redis's clock: the dead holder's units are moved to a past score."""
    if not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not set")
    settings.CACHES = {**settings.CACHES, "budgets": redis_store(settings.REDIS_URL)}
    settings.API_RATE_LIMIT_CACHE = "budgets"
    settings.API_CONCURRENCY_LIMITS = {"test": 1, "live": 1}
    budgets.hold(budgets.merchant_scope(merchant.id, "test"))  # never released
    assert echo(api).status_code == 429
    cache = caches["budgets"]
    client = cache._cache.get_client(write=True)
    key = cache.make_and_validate_key(f"budget:{merchant.id}:test")
    client.zadd(key, dict.fromkeys(client.zrange(key, 0, -1), 1.0))  # expired in 1970
    assert echo(api).status_code == 201


# --- real threads -----------------------------------------------------------------------------


def send_together(requests_: list[tuple[str, dict]]) -> list:
    """POST each (secret, body) to /v1/test/work from its own thread, released by a barrier."""
    barrier, responses = threading.Barrier(len(requests_)), [None] * len(requests_)

    def send(index, secret, body):
        try:
            barrier.wait(timeout=30)
            responses[index] = key_client(secret).post("/v1/test/work", body, format="json")
        finally:
            connection.close()

    threads = [
        threading.Thread(target=send, args=(index, *request))
        for index, request in enumerate(requests_)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return responses


def statuses(responses) -> list[int]:
    return sorted(response.status_code for response in responses)


@pytest.mark.postgres
def test_concurrent_requests_beyond_the_budget_are_refused(new_merchant, settings, store):
    """Four test-mode requests at once against a budget of two (each holds its thread for
    3 s); the live key's two are served meanwhile; then the units are all back."""
    settings.API_CONCURRENCY_LIMITS = {"test": 2, "live": 2}
    test_key = new_merchant.keys["test"]["secret"].secret
    live_key = new_merchant.keys["live"]["secret"].secret
    slow = {"tag": "slow", "delay_ms": 3000}
    responses = send_together([(test_key, slow)] * 4 + [(live_key, slow)] * 2)
    assert statuses(responses[:4]) == [201, 201, 429, 429]
    refused = [response for response in responses[:4] if response.status_code == 429]
    assert {response.json()["error"]["code"] for response in refused} == {"rate_limit_exceeded"}
    assert statuses(responses[4:]) == [201, 201]
    assert statuses(send_together([(test_key, {"tag": "after"})] * 2)) == [201, 201]


def in_flight(count: int) -> None:
    """Until `count` requests run in this process (the slow one has started)."""
    deadline = time.monotonic() + 10
    while shedding._busy[0] < count:
        assert time.monotonic() < deadline, "the slow request never started"
        time.sleep(0.01)


@pytest.mark.postgres
def test_busy_threads_shed_anonymous_then_test_requests_never_live(new_merchant, settings):
    """Two threads, one kept for live keys: while one request runs, a test key's request and
    a keyless one are refused at once; a live key's is served."""
    settings.API_LOAD_SHEDDING = True
    settings.WEB_THREADS, settings.API_LIVE_RESERVED_THREADS = 2, 1
    live_key = new_merchant.keys["live"]["secret"].secret
    slow = threading.Thread(
        target=send_together, args=([(live_key, {"tag": "slow", "delay_ms": 3000})],)
    )
    slow.start()
    try:
        in_flight(1)
        shed = key_client(new_merchant.keys["test"]["secret"].secret).get("/v1/test/keys")
        error_of(shed, 429, "rate_limit_error", "rate_limit_exceeded")
        assert shed["Retry-After"] == "1" and "X-Request-Id" in shed
        assert key_client(None).get("/v1/test/keys").status_code == 429
        assert key_client(live_key).get("/v1/test/keys").status_code == 200
    finally:
        slow.join()
    assert (
        key_client(new_merchant.keys["test"]["secret"].secret).get("/v1/test/keys").status_code
        == 200
    )


@pytest.mark.parametrize(
    ("threads", "reserved", "busy", "shed"),
    [
        # 4 threads, 1 reserved: anonymous shed past 2 busy, test past 3, live never.
        (4, 1, 2, {shedding.LIVE: False, shedding.TEST: False, shedding.ANONYMOUS: False}),
        (4, 1, 3, {shedding.LIVE: False, shedding.TEST: False, shedding.ANONYMOUS: True}),
        (4, 1, 4, {shedding.LIVE: False, shedding.TEST: True, shedding.ANONYMOUS: True}),
        (4, 1, 40, {shedding.LIVE: False, shedding.TEST: True, shedding.ANONYMOUS: True}),
        # The test-mode pool (serve.py web-test) keeps none: test requests queue, never shed.
        (4, 0, 4, {shedding.LIVE: False, shedding.TEST: False, shedding.ANONYMOUS: True}),
        (None, 1, 40, {shedding.LIVE: False, shedding.TEST: False, shedding.ANONYMOUS: False}),
    ],
)
def test_what_is_shed_when(settings, threads, reserved, busy, shed):
    settings.API_LOAD_SHEDDING = threads is not None  # None: shedding off
    settings.WEB_THREADS, settings.API_LIVE_RESERVED_THREADS = threads or 4, reserved
    assert {each: shedding.shed(each, busy) for each in shed} == shed


@pytest.mark.parametrize(
    ("header", "priority"),
    [
        ("Bearer svc_sk_live_abc", shedding.LIVE),
        ("Bearer svc_pk_live_abc", shedding.LIVE),
        ("bearer  svc_sk_test_abc", shedding.TEST),
        ("Bearer svc_pk_test_abc", shedding.TEST),
        ("Bearer sk_live_abc", shedding.ANONYMOUS),
        ("Basic svc_sk_live_abc", shedding.ANONYMOUS),
        ("", shedding.ANONYMOUS),
    ],
)
def test_priority_is_read_from_the_key_prefix(header, priority):
    assert shedding.priority(header) == priority


@pytest.mark.parametrize(
    "setting",
    [
        {"API_CONCURRENCY_TEST": "0"},
        {"API_ADDRESS_RATE": "0"},
        {"API_COST_BYTES": "0"},
        {"WEB_THREADS": "0"},
        {"API_LIVE_RESERVED_THREADS": "-1"},
    ],
)
def test_a_budget_that_would_refuse_everything_refuses_to_start(setting):
    result = import_settings(DEBUG="true", **setting)
    assert result.returncode != 0
    assert "API_CONCURRENCY_" in result.stderr
