"""Reads shared by the events views, the admin and the operator commands."""

import datetime

from api.errors import NotFound
from api.ids import is_id
from events.models import Event
from webhooks.models import Delivery


def events_of(merchant, livemode: bool, *, type: str | None = None, resource: str | None = None):
    """Events of one merchant and mode (modes never mix), optionally one type or resource."""
    events = Event.objects.filter(merchant=merchant, livemode=livemode)
    if type:
        events = events.filter(type=type)
    if resource:
        events = events.filter(resource_id=resource)
    return events


def event_get(*, merchant, livemode: bool, event_id: str) -> Event:
    """What is not an `evt_` id is not looked up (a NUL byte cannot be sent to PostgreSQL)."""
    if not is_id(event_id, "evt"):
        raise NotFound("No such event.")
    event = events_of(merchant, livemode).filter(pk=event_id).first()
    if event is None:
        raise NotFound("No such event.")
    return event


def dead_letters(*, merchant_id: str | None = None, since: datetime.datetime | None = None):
    """Deliveries that ran out of retries, oldest event first."""
    deliveries = Delivery.objects.filter(status=Delivery.Status.DEAD_LETTERED)
    if merchant_id:
        deliveries = deliveries.filter(event__merchant_id=merchant_id)
    if since:
        deliveries = deliveries.filter(event__created__gte=since)
    return deliveries.select_related("event", "endpoint").order_by("event_id", "endpoint_id")
