"""The per-process cache of the API-key lookup (accounts/keycache.py): a hit runs one query (the
configuration revision's read, infra/revision.py), every change made through the services or
the admin is seen by the next request (one made by hand within MAX_AGE), and Redis, up, down or
hung, changes none of it.

A test's transaction is never committed; the revision a change sets in it is seen by the test's
own connection as another process sees it after the commit (tests/infra/test_revision.py runs
changes on other connections, tests/e2e/test_config_across_nodes.py in other processes).
"""

import datetime
import hashlib
import json
import logging
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts import keycache, keys
from accounts.models import ApiKey
from accounts.services import api_key_find, api_key_revoke
from api.models import IdempotencyRecord
from infra import revision
from tests.accounts.test_authentication import assert_error
from tests.conftest import key_client, redis_cache_at
from tests.payments.support import APPROVED, create, error_of, payment_body, tokenize
from tests.payments.test_limits import form_fields
from tests.sick import CLOSED_PORT_URL, FORWARD

pytestmark = [pytest.mark.urls("tests.support.urls"), pytest.mark.postgres]

PATH = "/v1/test/publishable"  # runs no SQL of its own


@pytest.fixture
def secret(new_merchant):
    return new_merchant.keys["test"]["secret"].secret


@pytest.fixture
def key(new_merchant):
    return new_merchant.keys["test"]["secret"].api_key


def key_lookups(queries: CaptureQueriesContext) -> int:
    """The API key's lookups (its row joined to its merchant's)."""
    table = connection.ops.quote_name(ApiKey._meta.db_table)
    return sum(
        f"FROM {table} " in q["sql"] and "JOIN" in q["sql"] for q in queries.captured_queries
    )


def lookups_for(client, requests: int = 2) -> int:
    """How many requests of `requests` (each 200) looked the key up in the database."""
    with CaptureQueriesContext(connection) as queries:
        for _ in range(requests):
            assert client.get(PATH).status_code == 200
    return key_lookups(queries)


def revision_only(queries: CaptureQueriesContext) -> bool:
    return [q["sql"] for q in queries.captured_queries] == [revision.SQL]


def test_a_second_request_with_the_same_key_reads_only_the_revision(api):
    assert api.get(PATH).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        assert api.get(PATH).status_code == 200
    assert revision_only(queries)


@pytest.mark.parametrize(
    "revoke",
    [
        lambda key: api_key_revoke(api_key=key),
        lambda key: call_command("revoke_key", key.pk, "--for-real", stdout=StringIO()),
    ],
    ids=["service", "manage.py"],
)
def test_revoking_is_seen_by_the_next_request(api, key, revoke):
    assert api.get(PATH).status_code == 200
    revoke(key)
    assert_error(api.get(PATH), 401, "authentication_error", "api_key_revoked")


def test_a_revocation_by_hand_is_seen_within_max_age(api, key, monkeypatch):
    """An UPDATE that does not call `revision.changed()` (a shell, SQL by hand)."""
    assert api.get(PATH).status_code == 200
    ApiKey.objects.filter(pk=key.pk).update(revoked_at=timezone.now())
    assert api.get(PATH).status_code == 200  # the revision did not change
    monkeypatch.setattr(revision, "MAX_AGE", -1.0)  # as MAX_AGE seconds later
    assert_error(api.get(PATH), 401, "authentication_error", "api_key_revoked")


def test_a_key_revoked_while_redis_is_down_stays_refused_once_redis_is_back(
    api, key, sick_redis, settings, time_machine, django_capture_on_commit_callbacks
):
    """Issue 21: revoked while Redis was unreachable, the key was refused, then served from
    the cache again for up to a minute once Redis answered (the revision set in Redis was
    lost)."""
    time_machine.move_to(timezone.now(), tick=False)
    sick_redis.set_mode(FORWARD)
    redis_cache_at(settings, sick_redis.url)
    assert api.get(PATH).status_code == 200  # cached
    sick_redis.go_down()  # what it was sent while down is lost, not held back
    with django_capture_on_commit_callbacks(execute=True):  # as the commit would
        api_key_revoke(api_key=key)
    assert_error(api.get(PATH), 401, "authentication_error", "api_key_revoked")
    sick_redis.set_mode(FORWARD)
    time_machine.shift(datetime.timedelta(seconds=settings.DEPENDENCY_RETRY_SECONDS))
    for _ in range(2):
        assert_error(api.get(PATH), 401, "authentication_error", "api_key_revoked")


def test_a_change_committed_during_the_lookup_invalidates_what_it_read(api):
    """The entry is stored under the revision read before the database read, so a change
    committed meanwhile (the revision it sets lands while the row is read) is not served."""

    def bump_during_lookup(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if "key_hash" in sql:
            with connection.cursor() as cursor:  # another process's commit, while it is read
                cursor.execute(revision.CHANGE_SQL)
        return result

    with connection.execute_wrapper(bump_during_lookup):
        assert api.get(PATH).status_code == 200
    assert lookups_for(api) == 1  # the first of them reads again, the second is a hit


def test_a_merchant_edited_in_the_admin_is_seen_by_the_next_request(api, merchant, staff_client):
    assert create(api, APPROVED, amount=5000).status_code == 201
    path = f"/admin/accounts/merchant/{merchant.pk}/change/"
    fields = form_fields(staff_client.get(path).content.decode())
    response = staff_client.post(path, {**fields, "transaction_limit": "4000"})
    assert response.status_code == 302
    error_of(create(api, APPROVED, amount=5000), 422, "processing_error", "amount_above_limit")


def test_expiry_is_checked_on_every_request(api, key, time_machine):
    time_machine.move_to("2026-11-21T10:00:00Z", tick=False)
    ApiKey.objects.filter(pk=key.pk).update(
        expires_at=datetime.datetime(2026, 11, 21, 11, tzinfo=datetime.UTC)
    )
    assert api.get(PATH).status_code == 200
    time_machine.move_to("2026-11-21T11:00:00Z", tick=False)
    with CaptureQueriesContext(connection) as queries:
        response = api.get(PATH)
    assert key_lookups(queries) == 0  # from the cache, and still refused
    assert_error(response, 401, "authentication_error", "api_key_expired")


def test_use_is_still_recorded_at_most_once_a_minute(api, key, time_machine):
    time_machine.move_to("2026-11-21T10:00:00Z", tick=False)
    api.get(PATH)
    time_machine.move_to("2026-11-21T10:00:30Z", tick=False)
    with CaptureQueriesContext(connection) as queries:
        api.get(PATH)
    assert revision_only(queries)  # the entry knows the use recorded at 10:00
    time_machine.move_to("2026-11-21T10:01:30Z", tick=False)
    api.get(PATH)
    assert ApiKey.objects.get(pk=key.pk).last_used_at == datetime.datetime(
        2026, 11, 21, 10, 1, 30, tzinfo=datetime.UTC
    )


def test_each_lookup_gets_instances_of_its_own(secret):
    first = api_key_find(secret)
    first.merchant.pricing["type"] = "changed by one request"
    first.merchant.transaction_limit = 1
    with CaptureQueriesContext(connection) as queries:
        second = api_key_find(secret)
    assert revision_only(queries)
    assert (second.merchant.pricing, second.merchant.transaction_limit) == ({}, None)


def test_an_unknown_key_is_not_cached(merchant):
    secret = keys.generate_key("secret", livemode=False)
    client = key_client(secret)
    sizes = len(keycache.lookups)
    for _ in range(3):
        assert_error(client.get(PATH), 401, "authentication_error", "invalid_api_key")
    assert len(keycache.lookups) == sizes
    ApiKey.objects.create(  # unknown keys were not cached: it works at once
        merchant=merchant,
        kind="secret",
        livemode=False,
        key_hash=keys.hash_key(secret, "test-only-pepper"),
        pepper_version=1,
        prefix=keys.key_prefix("secret", False),
        last4=secret[-4:],
    )
    assert client.get(PATH).status_code == 200


def test_the_setting_turns_the_cache_off(settings, api):
    settings.API_KEY_CACHE = False
    assert lookups_for(api) == 2


@pytest.mark.parametrize("redis_at", ["none", "down"])
def test_without_redis_the_cache_works_and_no_traceback_is_logged(
    redis_at, settings, api, key, caplog, without_redis
):
    if redis_at == "down":
        redis_cache_at(settings, CLOSED_PORT_URL)
    with caplog.at_level(logging.WARNING):
        assert lookups_for(api) == 1
        api_key_revoke(api_key=key)
        assert_error(api.get(PATH), 401, "authentication_error", "api_key_revoked")
    assert not any(record.exc_info for record in caplog.records)


# An idempotent POST takes a cached key without reading the revision first: its claim's
# statement reads it and writes nothing unless it is the one the key was cached under
# (infra.revision.assume, api.idempotency._insert_if_new).


def idempotent_create(client, key: str):
    body = payment_body(tokenize(client))
    return client.post("/v1/payments", body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def claims_for(key: str) -> int:
    return IdempotencyRecord.objects.filter(
        key_hash=hashlib.sha256(key.encode()).hexdigest()
    ).count()


def test_an_idempotent_create_with_a_cached_key_reads_the_revision_in_its_claim(api):
    assert idempotent_create(api, "warm").status_code == 201
    token = tokenize(api)
    with CaptureQueriesContext(connection) as queries:
        response = api.post(
            "/v1/payments", payment_body(token), format="json", HTTP_IDEMPOTENCY_KEY="second"
        )
    assert response.status_code == 201, response.content
    statements = [q["sql"] for q in queries.captured_queries]
    assert revision.SQL not in statements  # no read of its own
    assert revision.SQL in statements[0] and "INSERT" in statements[0]  # the claim's
    assert key_lookups(queries) == 0


def test_a_key_revoked_after_it_was_cached_is_refused_and_claims_nothing(api, key, caplog):
    assert idempotent_create(api, "warm").status_code == 201
    body = payment_body(tokenize(api))
    api_key_revoke(api_key=key)
    with caplog.at_level(logging.INFO, logger="api.request"):
        response = api.post("/v1/payments", body, format="json", HTTP_IDEMPOTENCY_KEY="after")
    assert_error(response, 401, "authentication_error", "api_key_revoked")
    assert claims_for("after") == 0
    logged = json.loads(caplog.records[-1].getMessage())
    # As any request no valid key made: no merchant's, so no entry in its request log.
    assert (logged["status"], logged["merchant"], logged["key_id"]) == (401, None, None)


def test_a_key_revoked_after_it_was_cached_is_refused_its_replays(api, key):
    token = tokenize(api)
    first = api.post("/v1/payments", payment_body(token), format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert first.status_code == 201
    api_key_revoke(api_key=key)
    again = api.post("/v1/payments", payment_body(token), format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert_error(again, 401, "authentication_error", "api_key_revoked")


def test_a_revision_moved_by_another_change_looks_the_key_up_again_and_claims_once(api):
    assert idempotent_create(api, "warm").status_code == 201
    token = tokenize(api)
    with connection.cursor() as cursor:
        cursor.execute(revision.CHANGE_SQL)  # another merchant's endpoint, say
    with CaptureQueriesContext(connection) as queries:
        response = api.post(
            "/v1/payments", payment_body(token), format="json", HTTP_IDEMPOTENCY_KEY="moved"
        )
    assert response.status_code == 201, response.content
    assert key_lookups(queries) == 1
    assert claims_for("moved") == 1


def test_a_refusal_before_the_claim_is_not_answered_to_a_key_revoked_meanwhile(api, key):
    """A body refused before the claim (a card number) is answered only once the revision
    is read: 401 for a key revoked since it was cached, not the 400."""
    assert idempotent_create(api, "warm").status_code == 201
    body = {**payment_body(), "metadata": {"card": "4242424242424242"}}
    response = api.post("/v1/payments", body, format="json", HTTP_IDEMPOTENCY_KEY="refused")
    assert_error(response, 400, "validation_error", "raw_card_data_not_allowed")
    api_key_revoke(api_key=key)
    response = api.post("/v1/payments", body, format="json", HTTP_IDEMPOTENCY_KEY="refused")
    assert_error(response, 401, "authentication_error", "api_key_revoked")


def test_a_create_refused_in_its_handler_under_a_key_revoked_meanwhile_claims_nothing(api, key):
    """A create's claim waits for its step 1 (api.idempotency.idempotency_defer); refused
    before it (a negative amount) under a key revoked since it was cached, the request reads
    the revision, is refused 401 and claims nothing under the revoked key."""
    assert idempotent_create(api, "warm").status_code == 201
    body = payment_body(tokenize(api), amount=-1)
    api_key_revoke(api_key=key)
    response = api.post("/v1/payments", body, format="json", HTTP_IDEMPOTENCY_KEY="late")
    assert_error(response, 401, "authentication_error", "api_key_revoked")
    assert claims_for("late") == 0


def test_an_idempotent_create_records_a_use_that_is_due(api, key, time_machine):
    time_machine.move_to("2026-11-21T10:00:00Z", tick=False)
    assert idempotent_create(api, "first").status_code == 201
    time_machine.move_to("2026-11-21T10:01:30Z", tick=False)
    assert idempotent_create(api, "second").status_code == 201
    assert ApiKey.objects.get(pk=key.pk).last_used_at == datetime.datetime(
        2026, 11, 21, 10, 1, 30, tzinfo=datetime.UTC
    )
