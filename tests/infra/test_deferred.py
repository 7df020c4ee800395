"""Writes retried in the background (infra/deferred.py): until they succeed, or their deadline."""

from django.db import OperationalError

from infra.deferred import DeferredWrites
from tests.e2e.processes import wait_for


def failing_until(successful_try: int | None, tries: list):
    def write():
        tries.append(1)
        if successful_try is None or len(tries) < successful_try:
            raise OperationalError("the connection is closed")

    return write


def test_a_write_is_retried_until_it_succeeds_and_the_thread_then_ends(settings):
    settings.DEPENDENCY_RETRY_SECONDS = 0.01
    writes, tries = DeferredWrites("test-retries"), []
    writes.add("key", failing_until(3, tries), seconds_left=60)
    wait_for(lambda: writes.pending() == 0 and not writes.writer.running)
    assert len(tries) == 3


def test_a_write_that_keeps_failing_is_dropped_at_its_deadline(settings):
    settings.DEPENDENCY_RETRY_SECONDS = 0.01
    writes, tries = DeferredWrites("test-deadline"), []
    writes.add("key", failing_until(None, tries), seconds_left=0.2)
    wait_for(lambda: writes.pending() == 0 and not writes.writer.running)
    assert len(tries) >= 2  # tried while the deadline lasted, then given up


def test_a_newer_write_for_the_same_key_replaces_the_older(settings):
    settings.DEPENDENCY_RETRY_SECONDS = 3600  # the thread sleeps; the test runs the rounds
    writes, first, second = DeferredWrites("test-replace"), [], []
    writes.add("key", failing_until(None, first), seconds_left=60)
    writes.add("key", failing_until(1, second), seconds_left=60)
    writes.retry_once()
    assert (first, second, writes.pending()) == ([], [1], 0)
