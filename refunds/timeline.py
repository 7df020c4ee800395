"""One payment, one story (docs/sandbox.md "Timeline"): every request that touched a payment
(from the request log, redacted as it is stored), every status change, every event of the
payment and of its refunds, and every delivery attempt with its answer, in one time-ordered
list. `GET /v1/payments/:id/timeline` and the back office's payment page read it here.

It lives in `refunds`, the lowest room that sees a payment with its refunds, their events and
their attempts. A payment's story is short (a handful of requests and events), so the whole
list is built and a page cut from it (api.pagination.paginate_fixed) rather than merging four
cursors.
"""

import datetime
from dataclasses import dataclass

from django.db.models import Q

from api.idempotency import REPLAY_WINDOW
from api.ids import id_floor
from api.models import IdempotencyRecord, RequestLogEntry
from api.renderers import format_timestamp
from api.request_logs import entry_to_dict
from events.models import Event
from events.serializers import event_to_dict
from payments.models import Operation, Payment
from webhooks.models import Attempt
from webhooks.serializers import attempt_to_dict

# Requests read at most for one payment: a script polling a payment must not make its
# timeline unbounded (docs/sandbox.md "Timeline", limits).
MAX_REQUESTS = 1000
# Order of items at the same instant: a request starts before what it causes; a status change
# is told before the event that reports it; attempts follow their event.
RANKS = {"request": 0, "status_change": 1, "event": 2, "delivery_attempt": 3}


@dataclass(frozen=True)
class Item:
    type: str
    id: str
    at: datetime.datetime
    body: dict

    @property
    def key(self) -> str:
        """Names the item in a cursor: an event is both an event and a status change."""
        return f"{self.type}:{self.id}"

    def as_dict(self) -> dict:
        return {
            "object": "timeline_item",
            "type": self.type,
            "id": self.id,
            "at": format_timestamp(self.at),
            self.type: self.body,
        }


def payment_timeline(payment: Payment) -> list[Item]:
    """The payment's story, oldest first."""
    refund_ids = list(payment.refunds.values_list("id", flat=True))
    events = list(
        Event.objects.filter(
            merchant_id=payment.merchant_id,
            livemode=payment.livemode,
            resource_id__in=[payment.id, *refund_ids],
        ).order_by("created", "id")
    )
    items = [
        *(_request_item(entry) for entry in _requests(payment, refund_ids)),
        *(_event_item(event) for event in events),
        *_status_changes(events),
        *(
            _attempt_item(attempt)
            for attempt in Attempt.objects.filter(event__in=events).select_related("delivery")
        ),
    ]
    return sorted(items, key=lambda item: (item.at, RANKS[item.type], item.id))


def _requests(payment: Payment, refund_ids: list[str]):
    """Requests whose path names the payment or one of its refunds; the create itself (its
    path names no payment: found by the request id the payment keeps, or, for a payment
    created before it kept one, through its Idempotency-Key's claim while that is kept, 24
    hours) and its earlier tries with that key (a 5xx, a 429: answers the key is released
    after, injected ones among them). Reads of the timeline itself are left out: each read
    would add to it."""
    mine = RequestLogEntry.objects.filter(
        merchant_id=payment.merchant_id, livemode=payment.livemode
    )
    names = Q(path__startswith=f"/v1/payments/{payment.id}") | Q(path__endswith=f"/{payment.id}")
    names |= Q(path__in=[f"/v1/refunds/{refund_id}" for refund_id in refund_ids])
    created_by = IdempotencyRecord.objects.filter(
        pk__in=Operation.objects.filter(payment_id=payment.id, kind=Operation.Kind.CREATE).values(
            "idempotency_record_id"
        )
    ).values("request_id")
    tries = Q(
        method="POST",
        path="/v1/payments",
        idempotency_key__in=mine.filter(pk__in=created_by).values("idempotency_key"),
        pk__gte=id_floor("req", payment.created - REPLAY_WINDOW),  # the key's lifetime
        created__lte=payment.created,
    )
    since = id_floor("req", payment.created - datetime.timedelta(minutes=1))
    return (
        mine.filter(
            Q(pk__gte=since) & names | Q(pk=payment.request_id) | Q(pk__in=created_by) | tries
        )
        .exclude(path=f"/v1/payments/{payment.id}/timeline")
        .order_by("pk")[:MAX_REQUESTS]
    )


def _request_item(entry: RequestLogEntry) -> Item:
    # Logged when it ended: placed when it began, before what it caused.
    began = entry.created - datetime.timedelta(milliseconds=entry.duration_ms)
    return Item("request", entry.id, began, entry_to_dict(entry))


def _event_item(event: Event) -> Item:
    return Item("event", event.id, event.created, event_to_dict(event))


def _status_changes(events: list[Event]) -> list[Item]:
    """Each time an event shows its resource in another status than the one before (the
    first: from null). Read from the events' copies of the object, not from
    `previous_attributes`: an event written with the create has none."""
    items, last = [], {}
    for event in events:
        status = event.data["object"].get("status")
        before = last.get(event.resource_id)
        if status is not None and status != before:
            change = {
                "resource": event.resource_id,
                "from": before,
                "to": status,
                "event": event.id,
            }
            items.append(Item("status_change", event.id, event.created, change))
        last[event.resource_id] = status
    return items


def _attempt_item(attempt: Attempt) -> Item:
    return Item("delivery_attempt", attempt.id, attempt.attempted_at, attempt_to_dict(attempt))
