"""Thin tasks: ids in, one service call. Every one is safe to run twice or not at all; the
beat tasks find in the database whatever a lost or duplicated nudge left behind."""

import logging

from celery import shared_task
from django.db import InterfaceError
from django.db import OperationalError as DatabaseUnreachable
from django.utils import timezone
from kombu.exceptions import OperationalError

from infra.breaker import Unavailable, breaker
from webhooks.attempts import deliveries_drain, delivery_run
from webhooks.bulkhead import ENQUEUED_GRACE
from webhooks.claims import (
    deliveries_mark_enqueued,
    deliveries_mark_not_enqueued,
    due_delivery_ids,
)
from webhooks.fanout import events_fan_out
from webhooks.health import buckets_purge
from webhooks.lifecycle import dead_letter_digests_send
from webhooks.ordering import blocked_release_due
from webhooks.retention import events_purge
from webhooks.selectors import delivery_ids_by_mode, undispatched_event_ids

log = logging.getLogger(__name__)
_broker = breaker("Celery broker", (OperationalError,))
# Live and test deliveries each have a queue and a worker pool of their own (Procfile
# `webhooks` and `webhooks-test`), so live deliveries never wait behind test ones.
QUEUES = {True: "webhooks", False: "webhooks-test"}


def enqueue_deliveries(delivery_ids: list[str], livemode: bool | None = None) -> None:
    """Nudge a worker of the deliveries' mode per delivery (callers send only as many as the
    endpoints have free places: bulkhead.Load.nudges_wanted); `livemode` None: read from the
    rows. With the broker down, hung or known to be down (its breaker), a nudge fails within
    REDIS_TIMEOUT, or at once: the rows not nudged are marked so, and the next beat tick
    enqueues them once the broker is back. The caller's request does not fail or wait for it,
    and is not retried by its client (a retry is a duplicate)."""
    if livemode is None:
        for mode, ids in delivery_ids_by_mode(delivery_ids).items():
            enqueue_deliveries(ids, mode)
        return
    for sent, delivery_id in enumerate(delivery_ids):
        try:
            # No publish retries: Celery's default policy would wait seconds in a web thread.
            _broker.call(
                deliver.apply_async,
                (delivery_id,),
                {"livemode": livemode},
                queue=QUEUES[livemode],
                retry=False,
            )
        except (OperationalError, Unavailable):
            deliveries_mark_not_enqueued(delivery_ids[sent:])
            log.info("broker unavailable: %d deliveries left to the beat tick", len(delivery_ids))
            return


@shared_task
def dispatch_events(event_ids: list[str]) -> None:
    """The sweeper's fan-out of events committed without one."""
    enqueue_deliveries(events_fan_out(event_ids))


@shared_task(
    # The database unreachable: the nudge is sent again a second later, for as long as its
    # deliveries count as nudged (ENQUEUED_GRACE), so they go out within about a second of the
    # database's return instead of after the grace (docs/dependencies.md).
    autoretry_for=(DatabaseUnreachable, InterfaceError),
    default_retry_delay=1,
    max_retries=int(ENQUEUED_GRACE.total_seconds()),
)
def deliver(delivery_id: str | None = None, livemode: bool = True) -> None:
    """The named delivery if it is still due, then whatever else of its mode is due: under
    load one message drives many deliveries, and Celery's cost per message is most of a
    delivery's. (A message of an earlier release has no `livemode`: it drains live ones.)"""
    if delivery_id is not None:
        delivery_run(delivery_id)
    if deliveries_drain(livemode=livemode):
        # Out of time with work left: a thread of the same pool carries on after the queue.
        deliver.apply_async(kwargs={"livemode": livemode}, queue=QUEUES[livemode])


@shared_task
def deliver_due() -> None:
    blocked_release_due()  # those released are due now, nudged below with the rest
    delivery_ids = due_delivery_ids()
    deliveries_mark_enqueued(delivery_ids)
    enqueue_deliveries(delivery_ids)


@shared_task
def sweep_undispatched() -> None:
    for event_id in undispatched_event_ids():
        dispatch_events.delay([event_id])


@shared_task
def purge_old_events() -> int:
    """Beat, hourly: events past EVENT_RETENTION_DAYS, with their deliveries and attempts,
    and the health slices past their window."""
    buckets_purge(timezone.now())
    return events_purge()


@shared_task
def send_dead_letter_digests() -> int:
    """Beat, every WEBHOOK_DEAD_LETTER_DIGEST_SECONDS."""
    return dead_letter_digests_send(timezone.now())
