"""Retention's one loop: old rows deleted in short, bounded batches (docs/data.md). Old rows
are found by primary key where ids are time-ordered: `pk < api.ids.id_floor(prefix, cutoff)`.

Each batch is its own transaction that locks only the rows it deletes, never a row a request
needs; a run stops after `seconds` and the next beat run carries on, so a backlog of months
(retention switched on late) drains over several runs instead of one long transaction.
"""

import time
from collections.abc import Callable

from django.db import transaction

BATCH_SIZE = 1000
RUN_SECONDS = 20.0


def delete_in_batches(
    oldest_ids: Callable[[int], list],
    delete: Callable[[list], object],
    *,
    batch: int = BATCH_SIZE,
    seconds: float = RUN_SECONDS,
) -> int:
    """`delete(ids)` in one transaction per batch of `oldest_ids(batch)`, until a batch comes
    back short or `seconds` have passed; -> how many ids were deleted."""
    deleted, started = 0, time.monotonic()
    while time.monotonic() - started < seconds:
        ids = oldest_ids(batch)
        if ids:
            with transaction.atomic():
                delete(ids)
            deleted += len(ids)
        if len(ids) < batch:
            break
    return deleted


def delete_raw(rows) -> None:
    """One DELETE statement. QuerySet.delete() loads every row to look for related rows to
    cascade to or protect (0.5 s for a batch of events with their JSON); the tables purged
    have none left by then, and their foreign keys are still checked by the database."""
    rows._raw_delete(rows.db)


def purge_rows(rows, *, order: str, batch: int = BATCH_SIZE) -> int:
    """Deletes the rows of the queryset `rows` in batches, oldest first in `order` (a column
    an index of `rows`'s condition is sorted by, so a batch reads only the rows it deletes);
    for tables nothing else refers to. -> how many were deleted."""

    def oldest_ids(size: int) -> list:
        return list(rows.order_by(order).values_list("pk", flat=True)[:size])

    model = rows.model
    return delete_in_batches(
        oldest_ids, lambda ids: delete_raw(model.objects.filter(pk__in=ids)), batch=batch
    )
