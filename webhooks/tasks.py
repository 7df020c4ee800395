"""Thin tasks: ids in, one service call. Every one is safe to run twice or not at all; the
beat tasks find in the database whatever a lost or duplicated nudge left behind."""

import logging

from celery import shared_task
from kombu.exceptions import OperationalError

from webhooks.attempts import deliveries_drain, delivery_run
from webhooks.claims import deliveries_mark_enqueued, due_delivery_ids
from webhooks.fanout import events_fan_out
from webhooks.selectors import undispatched_event_ids

log = logging.getLogger(__name__)


def enqueue_deliveries(delivery_ids: list[str]) -> None:
    """Nudge a worker per delivery (callers send only as many as the endpoints have free
    places: bulkhead.Load.nudges_wanted). With the broker down the rows stay due, and the beat
    tick enqueues them once it is back, so the caller's request does not fail for it."""
    for delivery_id in delivery_ids:
        try:
            deliver.delay(delivery_id)
        except OperationalError:
            log.warning(
                "broker unavailable: %d deliveries left to the beat tick", len(delivery_ids)
            )
            return


@shared_task
def dispatch_events(event_ids: list[str]) -> None:
    """The sweeper's fan-out of events committed without one."""
    enqueue_deliveries(events_fan_out(event_ids))


@shared_task
def deliver(delivery_id: str | None = None) -> None:
    """The named delivery if it is still due, then whatever else is due: under load one
    message drives many deliveries, and Celery's cost per message is most of a delivery's."""
    if delivery_id is not None:
        delivery_run(delivery_id)
    if deliveries_drain():
        deliver.delay()  # out of time with work left: a thread carries on after the queue


@shared_task
def deliver_due() -> None:
    delivery_ids = due_delivery_ids()
    deliveries_mark_enqueued(delivery_ids)
    enqueue_deliveries(delivery_ids)


@shared_task
def sweep_undispatched() -> None:
    for event_id in undispatched_event_ids():
        dispatch_events.delay([event_id])
