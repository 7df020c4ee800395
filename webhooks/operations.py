"""Resend and requeue as the API, the admin and manage.py use them: reopen the deliveries in
the database, then nudge the workers. The rows are the truth; a lost nudge is picked up by the
beat tick within seconds."""

from events.models import Event
from webhooks.delivery import deliveries_reopen, event_resend
from webhooks.models import WebhookEndpoint
from webhooks.tasks import enqueue_deliveries


def resend_event(*, event: Event, endpoint: WebhookEndpoint | None = None) -> list[str]:
    """-> ids of the deliveries made due again; 422 `no_matching_endpoint` with none."""
    delivery_ids = event_resend(event=event, endpoint=endpoint)
    enqueue_deliveries(delivery_ids)
    return delivery_ids


def requeue_dead_letters(deliveries) -> list[str]:
    delivery_ids = deliveries_reopen(list(deliveries))
    enqueue_deliveries(delivery_ids)
    return delivery_ids
