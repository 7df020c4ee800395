from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Merchant
from api.ids import PrefixedIdField


class Event(models.Model):
    """An immutable record of something that happened to a resource.

    `dispatched_at` is the outbox flag: null until the webhooks room has fanned the event out
    into deliveries. The event is written in the same transaction as the state change it
    reports.
    """

    id = PrefixedIdField(prefix="evt")
    # No index of its own: event_list leads with the merchant.
    merchant = models.ForeignKey(
        Merchant, on_delete=models.PROTECT, related_name="events", db_index=False
    )
    livemode = models.BooleanField()
    type = models.CharField(max_length=64)
    api_version = models.CharField(max_length=10)
    resource_id = models.CharField(max_length=64, help_text="id of data.object")
    # The resource's change number: 1 for its first event, one more for each later one, so a
    # receiver can tell the newer state (docs/webhooks.md "Ordering"). Set by the database as
    # the row is inserted (trigger `resource_version`, events/migrations/0007): no read before
    # the INSERT and no parameter in it. Safe from duplicates because every change of a
    # resource writes its events under that resource's row lock. An Event just inserted by
    # the ORM or infra.rows holds DatabaseDefault here: refresh_from_db() to read it.
    resource_version = models.PositiveIntegerField(db_default=1)
    data = models.JSONField(help_text='{"object": ..., "previous_attributes": ...}')
    created = models.DateTimeField(default=timezone.now)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    # Set when a delivery of this event ran out of retries (spec "Other state": `dead_lettered`).
    dead_lettered_at = models.DateTimeField(null=True, blank=True)
    # The event's place in the feed (events/feed.py): the id of the transaction that wrote it
    # (xid8, as a number), then its order among all events. Both are set by the database as
    # the row is inserted (migration 0007), whoever inserts it; never from Python (an insert
    # leaves them to the database: db_default).
    transaction_id = models.BigIntegerField(db_default=0, editable=False)
    sequence = models.BigIntegerField(db_default=0, editable=False)

    class Meta:
        permissions = [("resend_event", "Can resend events to their endpoints")]
        indexes = [
            models.Index(fields=["merchant", "livemode", "-id"], name="event_list"),
            # GET /v1/events?type= (docs/data.md "Reads at scale").
            models.Index(fields=["merchant", "livemode", "type", "-id"], name="event_type"),
            # A resource's events (ids unique across merchants and modes): GET
            # /v1/events?resource=, the back office's search, the numbering trigger's read of
            # the resource's latest version (events 0010).
            models.Index(fields=["resource_id"], name="event_resource_id"),
            models.Index(
                fields=["created"],
                condition=Q(dispatched_at__isnull=True),
                name="event_undispatched",
            ),
            # The back office's dead-lettered events of a merchant: a few, among millions.
            models.Index(
                fields=["merchant", "-id"],
                condition=Q(dead_lettered_at__isnull=False),
                name="event_dead_lettered",
            ),
            # GET /v1/events/feed reads a merchant's events in this order.
            models.Index(
                fields=["merchant", "livemode", "transaction_id", "sequence"], name="event_feed"
            ),
        ]

    def __str__(self):
        return f"{self.type} {self.id}"
