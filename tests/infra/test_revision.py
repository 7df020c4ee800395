"""The configuration revision (infra/revision.py): a row in PostgreSQL that every write to cached
configuration changes in its own transaction (`revision.changed()`: each write path,
tests/infra/test_revision_writers.py), read at every lookup without touching Redis; and the
per-process cache kept under it.

Changes made by other processes are changes committed on another connection (a thread here);
tests/e2e/test_config_across_nodes.py runs them across real processes."""

import threading

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import ApiKey
from accounts.services import api_key_revoke, merchant_create
from infra import revision
from infra.revision import RevisionCache
from tests.conftest import redis_cache_at
from tests.payments.support import payment_body, tokenize

pytestmark = pytest.mark.postgres


def revision_reads(queries: CaptureQueriesContext) -> int:
    return sum("api_config_revision" in q["sql"] for q in queries.captured_queries)


def in_another_connection(change) -> None:
    """Run `change` on a connection of its own, committed when it returns."""

    def run():
        try:
            change()
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()


def test_each_read_is_one_query_to_postgresql_and_none_to_redis(db, sick_redis, settings):
    redis_cache_at(settings, sick_redis.url)  # a Redis that hangs: never asked
    with CaptureQueriesContext(connection) as queries:
        first, second = revision.current(), revision.current()
    assert first == second and isinstance(first, int)
    assert (revision_reads(queries), len(queries)) == (2, 2)
    assert sick_redis.accepted == 0


@pytest.mark.django_db(transaction=True)
def test_a_change_committed_by_another_process_is_seen_at_the_next_read():
    merchant_create(name="Acme", email="a@acme.test")
    before = revision.current()
    in_another_connection(lambda: merchant_create(name="Acme 2", email="b@acme.test"))
    assert revision.current() != before


@pytest.mark.django_db(transaction=True)
def test_a_change_rolled_back_leaves_the_revision_as_it_was():
    key = merchant_create(name="Acme", email="a@acme.test").keys["test"]["secret"].api_key
    before = revision.current()
    with pytest.raises(RuntimeError), transaction.atomic():
        api_key_revoke(api_key=key)
        assert revision.current() != before  # this transaction sees its own change
        raise RuntimeError
    assert revision.current() == before


def test_a_write_that_does_not_call_changed_leaves_it(new_merchant):
    """No trigger: recording a use, or a save outside the services and the admin (a shell),
    leaves it; the latter is seen within MAX_AGE."""
    key = new_merchant.keys["test"]["secret"].api_key
    before = revision.current()
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now())
    new_merchant.merchant.name = "Renamed in a shell"
    new_merchant.merchant.save()
    assert revision.current() == before


def test_an_entry_is_served_only_under_the_revision_it_was_stored_under(new_merchant):
    cache = RevisionCache("API_KEY_CACHE", max_entries=8)
    read_under, value = cache.get("k")
    assert (read_under is not None, value) == (True, None)
    cache.put("k", read_under, "v")
    assert cache.get("k") == (read_under, "v")
    api_key_revoke(api_key=new_merchant.keys["test"]["secret"].api_key)
    assert cache.get("k")[1] is None


def test_the_cache_keeps_the_most_recently_used_entries(db):
    cache = RevisionCache("API_KEY_CACHE", max_entries=2)
    for key in ("a", "b"):
        cache.put(key, cache.get(key)[0], key)
    cache.get("a")  # used: "b" is now the oldest
    cache.put("c", cache.get("c")[0], "c")
    assert len(cache) == 2
    assert [cache.get(key)[1] for key in ("a", "b", "c")] == ["a", None, "c"]


def test_an_entry_is_served_for_max_age_at_most(db, monkeypatch):
    cache = RevisionCache("API_KEY_CACHE", max_entries=8)
    cache.put("k", cache.get("k")[0], "v")
    monkeypatch.setattr(revision, "MAX_AGE", -1.0)
    assert cache.get("k")[1] is None


def test_the_setting_off_caches_nothing_and_reads_no_revision(db, settings):
    settings.API_KEY_CACHE = False
    cache = RevisionCache("API_KEY_CACHE", max_entries=8)
    with CaptureQueriesContext(connection) as queries:
        cache.put("k", cache.get("k")[0], "v")
        assert cache.get("k") == (None, None)
    assert (len(cache), len(queries)) == (0, 0)


def test_a_request_reads_it_once_whatever_caches_it_consults(api):
    # The key's lookup and the sandbox's failure-profile check both ask for it in a create.
    body = payment_body(tokenize(api))
    with CaptureQueriesContext(connection) as queries:
        assert api.post("/v1/payments", body, format="json").status_code == 201
    assert revision_reads(queries) == 1


def test_a_change_in_the_request_drops_its_read(db):
    # request_started's other receivers would close the test's connection: ours alone.
    revision._request_starts()
    try:
        with CaptureQueriesContext(connection) as queries:
            first = revision.current()
            assert revision.current() == first
            with transaction.atomic():
                revision.changed()
                assert revision.current() != first
    finally:
        revision._request_ends()
    assert revision_reads(queries) == 3  # read, changed, read again
    with CaptureQueriesContext(connection) as queries:
        revision.current(), revision.current()
    assert revision_reads(queries) == 2  # outside a request, every call reads
