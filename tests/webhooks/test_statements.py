"""The delivery statements' contract (webhooks/statements/__init__.py), one test per promise,
run against each backend module the database can run: the hand-written PostgreSQL one, and
the portable ORM one, which the embedded SQLite uses and which runs on PostgreSQL too, so
every CI run holds both to the same behaviour."""

import datetime

import pytest
from django.db import connection
from django.utils import timezone

from tests.webhooks.urls import public_url
from webhooks.bulkhead import (
    LEASE,
    MAX_IN_FLIGHT_PER_ENDPOINT,
    Load,
    Recorded,
)
from webhooks.health import bucket_start
from webhooks.models import Attempt, Delivery, EndpointHealth, HealthBucket
from webhooks.services import endpoint_create
from webhooks.statements import portable, postgresql
from webhooks.streaks import Streak

pytestmark = pytest.mark.django_db
SECOND = datetime.timedelta(seconds=1)


@pytest.fixture(params=["portable", "postgresql"])
def backend(request):
    if request.param == "postgresql" and connection.vendor != "postgresql":
        pytest.skip("the hand-written statements are PostgreSQL's only")
    return {"portable": portable, "postgresql": postgresql}[request.param]


@pytest.fixture
def now():
    return timezone.now()


@pytest.fixture
def new_endpoint(merchant):
    def make(owner=None, *, livemode=False):
        return endpoint_create(
            merchant=owner or merchant, livemode=livemode, url=public_url()
        ).endpoint

    return make


@pytest.fixture
def new_delivery(emit_event, new_endpoint, now):
    """new_delivery(endpoint=None, **fields): a delivery of a new event, due now."""

    def make(endpoint=None, **fields):
        fields.setdefault("next_attempt_at", now)
        return Delivery.objects.create(
            event=emit_event(), endpoint=endpoint or new_endpoint(), **fields
        )

    return make


def test_claim_leases_a_due_delivery_and_loads_its_event_and_endpoint(backend, new_delivery, now):
    delivery = new_delivery()
    claimed = backend.claim(delivery.id, now, now + LEASE)
    assert claimed.id == delivery.id and claimed.claimed_until == now + LEASE
    assert claimed.event.id == delivery.event_id and claimed.event.data == delivery.event.data
    assert (
        claimed.endpoint.id == delivery.endpoint_id
        and claimed.endpoint.url == delivery.endpoint.url
    )
    assert Delivery.objects.get(pk=delivery.id).claimed_until == now + LEASE


def test_claim_refuses_what_is_leased_not_due_or_finished(backend, new_delivery, now):
    leased = new_delivery(claimed_until=now + SECOND)
    later = new_delivery(next_attempt_at=now + SECOND)
    done = new_delivery(status=Delivery.Status.DELIVERED)
    for delivery in (leased, later, done):
        assert backend.claim(delivery.id, now, now + LEASE) is None
    assert backend.claim(leased.id, now + SECOND, now + LEASE).id == leased.id  # lease ran out


def test_claim_next_takes_the_oldest_due_and_skips_full_endpoints(
    backend, new_delivery, new_endpoint, now
):
    full, free = new_endpoint(), new_endpoint()
    for _ in range(MAX_IN_FLIGHT_PER_ENDPOINT):
        new_delivery(full, claimed_until=now + LEASE)
    new_delivery(full, next_attempt_at=now - 3 * SECOND)  # oldest, but its endpoint is full
    newer = new_delivery(free, next_attempt_at=now - SECOND)
    older = new_delivery(free, next_attempt_at=now - 2 * SECOND)
    new_delivery(free, next_attempt_at=now + SECOND)  # not due
    assert backend.claim_next(now, now + LEASE, False).id == older.id
    assert backend.claim_next(now, now + LEASE, False).id == newer.id
    assert backend.claim_next(now, now + LEASE, False) is None


def test_claim_next_takes_only_its_mode(backend, new_delivery, new_endpoint, now):
    """Live and test deliveries have worker pools of their own (issue 20: a test-mode
    endpoint that hangs delayed live webhooks)."""
    test = new_delivery(new_endpoint(), next_attempt_at=now - 2 * SECOND)  # the oldest
    live = new_delivery(new_endpoint(livemode=True), next_attempt_at=now - SECOND)
    assert backend.claim_next(now, now + LEASE, True).id == live.id
    assert backend.claim_next(now, now + LEASE, True) is None
    assert backend.claim_next(now, now + LEASE, False).id == test.id


def test_claim_next_skips_accounts_with_every_place_taken(
    backend, new_delivery, new_endpoint, other_merchant, now, settings
):
    """issue 20: one merchant's hanging endpoints took every worker thread. An account (a
    merchant in one mode) has WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT places across its
    endpoints."""
    noisy = [new_endpoint() for _ in range(3)]  # none full: 12 places over three endpoints
    for n in range(settings.WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT):
        new_delivery(noisy[n % 3], claimed_until=now + LEASE)
    new_delivery(noisy[0], next_attempt_at=now - 2 * SECOND)  # oldest, its account is full
    new_delivery(new_endpoint(livemode=True), next_attempt_at=now - 2 * SECOND)  # other mode
    neighbour = new_delivery(new_endpoint(other_merchant), next_attempt_at=now - SECOND)
    assert backend.claim_next(now, now + LEASE, False).id == neighbour.id
    assert backend.claim_next(now, now + LEASE, False) is None
    assert backend.claim_next(now, now + LEASE, True) is not None  # its live account is apart


def test_in_flight_counts_the_endpoints_and_the_accounts_leases_but_one(
    backend, new_delivery, new_endpoint, other_merchant, now
):
    endpoint, sibling = new_endpoint(), new_endpoint()
    mine = new_delivery(endpoint, claimed_until=now + LEASE)
    new_delivery(endpoint, claimed_until=now + 2 * SECOND)
    new_delivery(endpoint, claimed_until=now + LEASE)
    new_delivery(endpoint, claimed_until=now - SECOND)  # ran out
    new_delivery(sibling, claimed_until=now + SECOND)  # the same account's
    new_delivery(new_endpoint(livemode=True), claimed_until=now + SECOND)  # the other mode's
    new_delivery(new_endpoint(other_merchant), claimed_until=now + SECOND)  # another account's
    assert backend.in_flight(mine, now) == (Load(2, now + 2 * SECOND), Load(3, now + SECOND))
    alone = new_delivery(new_endpoint(other_merchant), claimed_until=now + LEASE)
    assert backend.in_flight(alone, now) == (Load(0, None), Load(1, now + SECOND))


def test_loads_count_leases_and_live_nudges_per_endpoint(backend, new_delivery, new_endpoint, now):
    busy, nudged, idle = new_endpoint(), new_endpoint(), new_endpoint()
    new_delivery(busy, claimed_until=now + SECOND)
    new_delivery(busy, claimed_until=now + LEASE)
    new_delivery(busy, enqueued_until=now + SECOND)
    new_delivery(nudged, enqueued_until=now + SECOND)
    new_delivery(nudged, enqueued_until=now - SECOND)  # that nudge is presumed lost
    new_delivery(idle)
    loads = backend.loads([busy.id, nudged.id, idle.id], now)
    assert loads == {busy.id: Load(2, now + SECOND, 1), nudged.id: Load(0, None, 1)}


def attempt_of(delivery, number, retry_at):
    return Attempt(
        delivery=delivery,
        event_id=delivery.event_id,
        endpoint_id=delivery.endpoint_id,
        attempt=number,
        status=Attempt.Status.FAILED,
        http_status=500,
        response_body="no",
        error="HTTP 500",
        duration_ms=3,
        next_retry_at=retry_at,
        attempted_at=timezone.now(),
    )


def test_record_stores_the_attempt_and_the_deliverys_next_state(backend, new_delivery, now):
    delivery = new_delivery(claimed_until=now + LEASE, enqueued_until=now + SECOND)
    retry_at = now + 10 * SECOND
    attempt = attempt_of(delivery, 1, retry_at)
    recorded = backend.record(attempt, Delivery.Status.PENDING, now, now + LEASE)
    assert recorded == Recorded(stored=True, streak=Streak(1, attempt.attempted_at, None))
    assert Attempt.objects.get(pk=attempt.id).response_body == "no"
    stored = Delivery.objects.get(pk=delivery.id)
    assert (stored.status, stored.attempt_count, stored.next_attempt_at) == ("pending", 1, retry_at)
    assert (stored.claimed_until, stored.enqueued_until) == (None, None)
    assert stored.event.dead_lettered_at is None


def test_record_sets_the_events_dead_letter_once(backend, new_delivery, new_endpoint, now):
    first = new_delivery(claimed_until=now + LEASE)
    second = Delivery.objects.create(
        event=first.event, endpoint=new_endpoint(), claimed_until=now + LEASE
    )
    dead = Delivery.Status.DEAD_LETTERED
    later = now + SECOND
    assert backend.record(attempt_of(first, 1, None), dead, now, now + LEASE).stored
    assert backend.record(attempt_of(second, 1, None), dead, later, now + LEASE).stored
    assert Delivery.objects.get(pk=second.id).status == "dead_lettered"
    assert Delivery.objects.get(pk=first.id).event.dead_lettered_at == now  # the first death


def test_record_writes_nothing_once_the_lease_is_someone_elses(backend, new_delivery, now):
    """A holder whose lease ran out, and was taken over by another worker, records nothing:
    the new holder records that attempt number, once (issue 20: the second record failed on
    the unique attempt number, a 500 from simulate-webhook)."""
    taken_over = now + LEASE + 30 * SECOND
    delivery = new_delivery(claimed_until=taken_over)
    dead = Delivery.Status.DEAD_LETTERED
    recorded = backend.record(attempt_of(delivery, 1, None), dead, now, now + LEASE)
    assert recorded == Recorded(stored=False)
    assert not Attempt.objects.exists()
    assert not EndpointHealth.objects.exists() and not HealthBucket.objects.exists()
    stored = Delivery.objects.get(pk=delivery.id)
    assert (stored.status, stored.attempt_count, stored.claimed_until) == ("pending", 0, taken_over)
    assert stored.event.dead_lettered_at is None


def test_record_keeps_the_endpoints_health_counters(backend, new_delivery, new_endpoint, now):
    """The streak grows with each failure and keeps its start, a delivered attempt ends it
    (and its warning), a dead letter is counted for the digest, and each attempt lands in its
    5-minute slice (webhooks/health.py)."""
    endpoint = new_endpoint()
    first, second, third = (new_delivery(endpoint, claimed_until=now + LEASE) for _ in range(3))
    failed = attempt_of(first, 1, now + SECOND)
    backend.record(failed, Delivery.Status.PENDING, now, now + LEASE)
    dead = backend.record(
        attempt_of(second, 1, None), Delivery.Status.DEAD_LETTERED, now, now + LEASE
    )
    assert dead.streak == Streak(2, failed.attempted_at, None)
    health = EndpointHealth.objects.get(endpoint=endpoint)
    assert (health.undigested_dead_letters, health.last_failure_http_status) == (1, 500)
    assert health.last_failure_error == "HTTP 500" and health.last_success_at is None
    EndpointHealth.objects.filter(endpoint=endpoint).update(warned_at=now)
    delivered = attempt_of(third, 1, None)
    delivered.status = Attempt.Status.DELIVERED
    assert backend.record(delivered, Delivery.Status.DELIVERED, now, now + LEASE).streak == (
        Streak(0, None, None)
    )
    health.refresh_from_db()
    assert (health.consecutive_failures, health.failing_since, health.warned_at) == (0, None, None)
    assert health.last_success_at == delivered.attempted_at
    assert health.last_failure_at == failed.attempted_at or health.last_failure_at > now
    (bucket,) = HealthBucket.objects.filter(endpoint=endpoint)
    assert (bucket.starts, bucket.delivered, bucket.failed) == (
        bucket_start(delivered.attempted_at),
        1,
        2,
    )
