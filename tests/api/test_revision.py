"""The configuration revision (api/revision.py): read from Redis once per HTTP request, at every
read outside one; and the per-process cache kept under it.

Here the request_started / request_finished receivers are called as the signals call them
(sending the signals would also run close_old_connections, which a test must not);
tests/webhooks/test_endpoint_cache.py counts the reads of real requests.
"""

import threading

import pytest

from api import revision
from api.revision import RevisionCache


@pytest.fixture
def in_request():
    """This thread serves a request until the test ends."""
    revision.request_started()
    yield
    revision.request_finished()


def test_outside_a_request_every_read_goes_to_redis(revision_reads):
    first = revision.current()
    revision._set_new()  # another process's commit
    assert revision.current() != first
    assert len(revision_reads) == 2


def test_within_a_request_the_first_read_is_reused_until_it_ends(revision_reads, in_request):
    first = revision.current()
    revision._set_new()  # committed while the request runs: the request keeps its view
    assert revision.current() == first
    assert len(revision_reads) == 1
    revision.request_finished()
    assert revision.current() != first  # what runs after the request reads Redis
    assert len(revision_reads) == 2


def test_a_new_request_reads_afresh_even_without_the_last_ones_end(redis, in_request):
    first = revision.current()
    revision._set_new()
    revision.request_started()  # the last request's request_finished never came on this thread
    assert revision.current() != first


def test_a_requests_value_stays_on_its_thread(redis, in_request):
    first = revision.current()
    revision._set_new()
    seen = []
    other = threading.Thread(target=lambda: seen.append(revision.current()))
    other.start()
    other.join()
    assert seen[0] not in (first, None)


def test_without_redis_there_is_no_revision(settings):
    settings.CACHES = {
        **settings.CACHES,
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }
    assert revision.current() is None


def test_an_entry_is_served_only_under_the_revision_it_was_stored_under(redis):
    cache = RevisionCache("API_KEY_CACHE", max_entries=8)
    read_under, value = cache.get("k")
    assert (read_under is not None, value) == (True, None)
    cache.put("k", read_under, "v")
    assert cache.get("k") == (read_under, "v")
    revision._set_new()
    assert cache.get("k")[1] is None


def test_the_cache_keeps_the_most_recently_used_entries(redis):
    cache = RevisionCache("API_KEY_CACHE", max_entries=2)
    for key in ("a", "b"):
        cache.put(key, cache.get(key)[0], key)
    cache.get("a")  # used: "b" is now the oldest
    cache.put("c", cache.get("c")[0], "c")
    assert len(cache) == 2
    assert [cache.get(key)[1] for key in ("a", "b", "c")] == ["a", None, "c"]


def test_an_entry_is_served_for_max_age_at_most(redis, monkeypatch):
    cache = RevisionCache("API_KEY_CACHE", max_entries=8)
    cache.put("k", cache.get("k")[0], "v")
    monkeypatch.setattr(revision, "MAX_AGE", -1.0)
    assert cache.get("k")[1] is None


def test_the_setting_off_caches_nothing_and_reads_no_revision(revision_reads, settings):
    settings.API_KEY_CACHE = False
    cache = RevisionCache("API_KEY_CACHE", max_entries=8)
    cache.put("k", cache.get("k")[0], "v")
    assert cache.get("k") == (None, None)
    assert (len(cache), len(revision_reads)) == (0, 0)
