"""Events past their retention period go, with their deliveries and attempts (docs/data.md).

An event is kept at least as long as the spec needs it: its 72-hour retry window (settings
refuse a shorter EVENT_RETENTION_DAYS) and, after that, until none of its deliveries is still
pending. Events are found by primary key (ids are time-ordered ULIDs), so a run reads the rows
it deletes and no others, however large the table.
"""

from django.conf import settings
from django.utils import timezone

from api.ids import id_floor
from events.models import Event
from infra.retention import BATCH_SIZE, delete_in_batches, delete_raw
from webhooks.models import Attempt, Delivery


def events_purge(batch: int = BATCH_SIZE) -> int:
    """Beat: deletes events created before the retention period; -> how many."""
    cutoff = timezone.now() - settings.EVENT_RETENTION
    below = id_floor("evt", cutoff)

    def oldest_ids(batch: int) -> list[str]:
        old = Event.objects.filter(pk__lt=below, created__lt=cutoff)
        old = old.exclude(deliveries__status=Delivery.Status.PENDING)
        return list(old.order_by("pk").values_list("pk", flat=True)[:batch])

    def delete(ids: list[str]) -> None:
        delete_raw(Attempt.objects.filter(event_id__in=ids))  # children first
        delete_raw(Delivery.objects.filter(event_id__in=ids))
        delete_raw(Event.objects.filter(pk__in=ids))

    return delete_in_batches(oldest_ids, delete, batch=batch)
