"""Thin tasks: ids in, one service call. Every one is safe to run twice or not at all; the
beat tasks find in the database whatever a lost or duplicated nudge left behind."""

from celery import shared_task

from webhooks.delivery import (
    delivery_run,
    due_delivery_ids,
    event_fan_out,
    undispatched_event_ids,
)


def enqueue_deliveries(delivery_ids: list[str]) -> None:
    for delivery_id in delivery_ids:
        deliver.delay(delivery_id)


@shared_task
def dispatch_event(event_id: str) -> None:
    """Also settings.EVENT_DISPATCH_HOOKS: called in-process right after the event's commit."""
    enqueue_deliveries(event_fan_out(event_id))


@shared_task
def deliver(delivery_id: str) -> None:
    delivery_run(delivery_id)


@shared_task
def deliver_due() -> None:
    enqueue_deliveries(due_delivery_ids())


@shared_task
def sweep_undispatched() -> None:
    for event_id in undispatched_event_ids():
        dispatch_event.delay(event_id)
