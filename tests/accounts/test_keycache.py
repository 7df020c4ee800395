"""The per-process cache of the API-key lookup (accounts/keycache.py): hits run no SQL, every
committed change is seen by the next request, and without Redis nothing is cached.

A test's changes are never committed, so a change "commits" inside
django_capture_on_commit_callbacks(execute=True): that runs the revision bump as the commit
would.
"""

import datetime
import logging

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts import keycache, keys
from accounts.models import ApiKey
from accounts.services import api_key_find, api_key_revoke
from api import revision
from tests.accounts.test_authentication import assert_error
from tests.conftest import key_client, redis_store
from tests.payments.support import APPROVED, create, error_of
from tests.payments.test_limits import form_fields

pytestmark = pytest.mark.urls("tests.support.urls")

PATH = "/v1/test/publishable"  # runs no SQL of its own


@pytest.fixture
def secret(new_merchant):
    return new_merchant.keys["test"]["secret"].secret


@pytest.fixture
def key(new_merchant):
    return new_merchant.keys["test"]["secret"].api_key


def key_lookups(queries: CaptureQueriesContext) -> int:
    return sum("JOIN" in q["sql"] and "key_hash" in q["sql"] for q in queries.captured_queries)


def lookups_for(client, requests: int = 2) -> int:
    """How many requests of `requests` (each 200) looked the key up in the database."""
    with CaptureQueriesContext(connection) as queries:
        for _ in range(requests):
            assert client.get(PATH).status_code == 200
    return key_lookups(queries)


def test_a_second_request_with_the_same_key_runs_no_sql(redis, api):
    assert api.get(PATH).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        assert api.get(PATH).status_code == 200
    assert queries.captured_queries == []


def test_a_stale_entry_is_served_until_the_bump_then_revocation_is_at_once(
    redis, api, key, django_capture_on_commit_callbacks
):
    """As when another process revokes: the row changes, and only the bump tells this one."""
    assert api.get(PATH).status_code == 200
    ApiKey.objects.filter(pk=key.pk).update(revoked_at=timezone.now())  # no signal, no bump
    assert api.get(PATH).status_code == 200  # the entry: what the bump is for
    with django_capture_on_commit_callbacks(execute=True):
        revision.bump()
    assert_error(api.get(PATH), 401, "authentication_error", "api_key_revoked")


def test_revoking_is_seen_by_the_next_request(redis, api, key, django_capture_on_commit_callbacks):
    assert api.get(PATH).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        api_key_revoke(api_key=key)
    assert_error(api.get(PATH), 401, "authentication_error", "api_key_revoked")


def test_a_bump_takes_effect_when_the_transaction_commits(
    redis, db, django_capture_on_commit_callbacks
):
    before = revision.current()
    with django_capture_on_commit_callbacks() as callbacks:
        revision.bump()
    assert revision.current() == before  # not committed yet: other processes keep their rows
    for callback in callbacks:
        callback()
    assert revision.current() != before


def test_a_change_committed_during_the_lookup_invalidates_what_it_read(redis, api):
    """The entry is stored under the revision read before the database read, so a change
    committed meanwhile (its bump lands while the row is read) is not served afterwards."""

    def bump_during_lookup(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if "key_hash" in sql:
            revision._set_new()  # another process's commit, while the row is read
        return result

    with connection.execute_wrapper(bump_during_lookup):
        assert api.get(PATH).status_code == 200
    assert lookups_for(api) == 1  # the first of them reads again, the second is a hit


def test_a_merchant_edited_in_the_admin_is_seen_by_the_next_request(
    redis, api, merchant, staff_client, django_capture_on_commit_callbacks
):
    assert create(api, APPROVED, amount=5000).status_code == 201
    path = f"/admin/accounts/merchant/{merchant.pk}/change/"
    fields = form_fields(staff_client.get(path).content.decode())
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(path, {**fields, "transaction_limit": "4000"})
    assert response.status_code == 302
    error_of(create(api, APPROVED, amount=5000), 422, "processing_error", "amount_above_limit")


def test_expiry_is_checked_on_every_request(redis, api, key, time_machine):
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


def test_use_is_still_recorded_at_most_once_a_minute(redis, api, key, time_machine):
    time_machine.move_to("2026-11-21T10:00:00Z", tick=False)
    api.get(PATH)
    time_machine.move_to("2026-11-21T10:00:30Z", tick=False)
    with CaptureQueriesContext(connection) as queries:
        api.get(PATH)
    assert queries.captured_queries == []  # the entry knows the use recorded at 10:00
    time_machine.move_to("2026-11-21T10:01:30Z", tick=False)
    api.get(PATH)
    assert ApiKey.objects.get(pk=key.pk).last_used_at == datetime.datetime(
        2026, 11, 21, 10, 1, 30, tzinfo=datetime.UTC
    )


def test_each_lookup_gets_instances_of_its_own(redis, secret):
    first = api_key_find(secret)
    first.merchant.pricing["type"] = "changed by one request"
    first.merchant.transaction_limit = 1
    with CaptureQueriesContext(connection) as queries:
        second = api_key_find(secret)
    assert queries.captured_queries == []
    assert (second.merchant.pricing, second.merchant.transaction_limit) == ({}, None)


def test_an_unknown_key_is_not_cached(redis, merchant):
    secret = keys.generate_key("secret", livemode=False)
    client = key_client(secret)
    sizes = len(keycache.lookups)
    for _ in range(3):
        assert_error(client.get(PATH), 401, "authentication_error", "invalid_api_key")
    assert len(keycache.lookups) == sizes
    ApiKey.objects.create(  # not committed: no bump reaches the cache
        merchant=merchant,
        kind="secret",
        livemode=False,
        key_hash=keys.hash_key(secret, "test-only-pepper"),
        pepper_version=1,
        prefix=keys.key_prefix("secret", False),
        last4=secret[-4:],
    )
    assert client.get(PATH).status_code == 200


def test_without_redis_every_request_reads_the_database(without_redis, api):
    assert lookups_for(api) == 2


def test_the_setting_turns_the_cache_off(redis, settings, api):
    settings.API_KEY_CACHE = False
    assert lookups_for(api) == 2


def test_redis_down_reads_the_database_and_never_fails_authentication(
    settings, api, key, caplog, django_capture_on_commit_callbacks
):
    settings.CACHES = {**settings.CACHES, "default": redis_store("redis://127.0.0.1:1/0")}
    assert lookups_for(api) == 2
    with caplog.at_level(logging.ERROR), django_capture_on_commit_callbacks(execute=True):
        assert api_key_revoke(api_key=key).revoked_at is not None  # the bump fails, logged
    assert "_set_new" in caplog.text
    assert_error(api.get(PATH), 401, "authentication_error", "api_key_revoked")
