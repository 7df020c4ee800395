"""Recover (docs/webhooks.md "Recover"): one more attempt now for an endpoint's failed
deliveries since a time, a page at a time, and bounded when called in a loop. The API, the
admin and `manage.py recover_endpoint` call it."""

import datetime
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Min
from django.utils import timezone

from webhooks.fanout import deliveries_reopen
from webhooks.lifecycle import status_changed
from webhooks.models import Delivery, StatusChange, WebhookEndpoint
from webhooks.selectors import recoverable_deliveries
from webhooks.services import refuse_disabled
from webhooks.tasks import enqueue_deliveries

# A delivery recover re-sent is not re-sent by another recover for this long: a loop of
# calls costs a failing URL one POST a delivery an hour, at most.
RECOVER_AGAIN_AFTER = datetime.timedelta(hours=1)


@dataclass(frozen=True)
class Recovery:
    endpoint: WebhookEndpoint
    since: datetime.datetime
    event_ids: list[str]
    next_starting_after: str | None  # None: no candidate is left after this page

    @property
    def has_more(self) -> bool:
        return self.next_starting_after is not None


def endpoint_recover(
    *,
    endpoint: WebhookEndpoint,
    since: datetime.datetime,
    actor: str,
    starting_after: str | None = None,
    limit: int | None = None,
) -> Recovery:
    """Another attempt now, numbering continued (as resend), for each delivery to the
    endpoint that failed (waiting for a retry, dead-lettered or held) of an event created at
    or after `since` and after the event id `starting_after`, in pages of at most `limit`
    (WEBHOOK_RECOVER_MAX), oldest event first (`recover_page`). A delivery made due again is
    not picked a second time while it waits (its time has come), so repeating a call
    requeues nothing twice; nor, for RECOVER_AGAIN_AFTER from the endpoint's first recover,
    one attempted since."""
    refuse_disabled(endpoint)
    now = timezone.now()
    with transaction.atomic():
        chosen, next_after = recover_page(endpoint, since, now, starting_after, limit)
        delivery_ids = deliveries_reopen(chosen)
        if chosen:
            detail = f"{len(chosen)} events since {since:%Y-%m-%d %H:%M:%S} UTC requeued"
            status_changed(endpoint, StatusChange.Action.RECOVERED, actor, detail)
    enqueue_deliveries(delivery_ids, endpoint.livemode)
    return Recovery(endpoint, since, [d.event_id for d in chosen], next_after)


def recover_page(
    endpoint: WebhookEndpoint,
    since: datetime.datetime,
    now: datetime.datetime,
    starting_after: str | None = None,
    limit: int | None = None,
) -> tuple[list[Delivery], str | None]:
    """-> (what recover requeues, the event id to continue after; None when no candidate is
    left). A page is the first `limit` candidates after `starting_after`, less those attempted
    since a recover of the last hour (`first_recent_recover`), which are not replaced from
    further on: so a call reads at most a page of candidates however many a loop of recovers
    left attempted (issue 35: finding that none of 50,000 could be requeued walked them all,
    300 ms), and may requeue fewer than `limit`, even none, with more to come."""
    limit = limit or settings.WEBHOOK_RECOVER_MAX
    candidates = recoverable_deliveries(endpoint, since, now, starting_after)
    quiet_since = first_recent_recover(endpoint, now)
    if quiet_since is None:  # every candidate may go: the page is the first `limit`
        page = list(candidates[: limit + 1])
        return page[:limit], page[limit - 1].event_id if len(page) > limit else None
    edge = list(candidates.values_list("event_id", flat=True)[limit - 1 : limit + 1])
    next_after = edge[0] if len(edge) > 1 else None
    quiet = recoverable_deliveries(endpoint, since, now, starting_after, quiet_since)
    if next_after is not None:
        quiet = quiet.filter(event_id__lte=next_after)  # the page's end: read no further
    return list(quiet[:limit]), next_after


def first_recent_recover(endpoint: WebhookEndpoint, now: datetime.datetime):
    """When the endpoint's first recover within RECOVER_AGAIN_AFTER was (None: none). Recover
    called in a loop re-sent every failed delivery each time (issue 35: 960 POSTs at one URL
    in 25 s); a delivery attempted since that recover waits for its own schedule instead."""
    recent = StatusChange.objects.filter(
        endpoint=endpoint, action=StatusChange.Action.RECOVERED, at__gte=now - RECOVER_AGAIN_AFTER
    )
    return recent.aggregate(first=Min("at"))["first"]
