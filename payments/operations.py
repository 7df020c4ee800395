"""The record of each connector call (payments.models.Operation), which the operation runner
(payments.runner) writes at each step (docs/payments.md "Operation runner"): `started`
(refused while another is in flight: `refuse_if_busy`), then `applied` by exactly one writer
(`operation_apply`), or `abandoned` when the connector could not be asked.

A process that dies between asking and applying leaves the operation `started`; beat asks
the connector again with the same key and applies the answer (`operations_recover`).

A processor asked again about something it has not settled, or that could not be asked at all,
is asked after a wait that doubles with the thing's age (`ask_again_at`): the one schedule
of processing payments, pending refunds and operations recovery could not finish.
"""

import datetime
import functools
import logging
from collections.abc import Callable, Iterable

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from api.errors import ProcessingFailed, ServiceError
from api.ids import id_floor
from infra.keyed import by_key
from infra.retention import purge_rows
from infra.rows import Columns, changed_a_row
from payments.models import Operation

STARTED = Operation.State.STARTED
RECOVERY_BATCH = 200  # the next tick takes the rest
# Bounds of the wait before asking a processor again (docs/payments.md "Time"): not on every
# beat tick, and a settlement whose webhook was lost is still seen within 6 hours.
ASK_AGAIN_MIN_WAIT = datetime.timedelta(minutes=1)
ASK_AGAIN_MAX_WAIT = datetime.timedelta(hours=6)

log = logging.getLogger(__name__)


def ask_again_at(created: datetime.datetime, now: datetime.datetime) -> datetime.datetime:
    """When to ask a processor again about a thing made at `created` (a payment, a refund, an
    operation): after as long as it has existed, so the waits double with no count stored."""
    return now + min(max(now - created, ASK_AGAIN_MIN_WAIT), ASK_AGAIN_MAX_WAIT)


def ask_again_later(row, field: str, **unsettled) -> None:
    """Move `row`'s next ask (its `field`) to `ask_again_at`, if the filter `unsettled` still
    matches it (settled meanwhile: no row changes)."""
    when = ask_again_at(row.created, timezone.now())
    type(row).objects.filter(pk=row.pk, **unsettled).update(**{field: when})


def is_busy(payment_id: str) -> bool:
    """A connector call about the payment is in flight (its answer not yet applied)."""
    return Operation.objects.filter(payment_id=payment_id, state=STARTED).exists()


def refuse_if_busy(payment_id: str) -> None:
    """Under the payment's lock: no change may begin while a connector call is in flight,
    so exactly one caller reaches the connector."""
    if is_busy(payment_id):
        raise ProcessingFailed(
            f"Another operation on {payment_id} is still with the processor; retry shortly.",
            code="payment_in_progress",
        )


def operation_of_claim(record_id: int) -> Operation | None:
    """The operation a request with this Idempotency-Key claim started and did not abandon:
    the one its retry resumes."""
    linked = Operation.objects.filter(idempotency_record_id=record_id)
    return linked.exclude(state=Operation.State.ABANDONED).order_by("-created").first()


@functools.cache
def _mark_sql(*conditions: str) -> str:
    """The states are literals (plain words of ours), the id the one parameter: a create's
    chained statement then keeps to the 50 parameters up to which psycopg caches its parsing
    of a statement's text (~0.2 ms of CPU a create)."""
    o = Columns(Operation)
    applied, started = (f"'{state.value}'" for state in (Operation.State.APPLIED, STARTED))
    still_started = f"{o.state} = {started}"
    where = by_key(o.id, still_started, *conditions)
    return f"UPDATE {o.table} SET {o.state} = {applied} WHERE {where}"


def operation_applying(operation: Operation, guard: tuple[str, list] | None = None):
    """-> (sql, params) of the UPDATE that marks the operation applied if it is still
    `started` (and `guard`, a condition and its parameters, holds): it changes a row for
    exactly one writer. By hand, as it runs on every operation; `operation_apply` runs it, a
    create chains its inserts to it."""
    if guard is None:
        return _mark_sql(), [operation.pk]
    condition, params = guard
    return _mark_sql(condition), [operation.pk, *params]


def operation_apply(operation: Operation) -> bool:
    """Step 3, inside the transaction that writes the answer: True for the one writer that
    marks it applied; False when another (recovery, or the original request) already did."""
    return changed_a_row(operation_applying(operation))


def operation_abandon(operation: Operation) -> None:
    """The connector could not be asked (it raised): nothing was processed."""
    Operation.objects.filter(pk=operation.pk, state=STARTED).update(state=Operation.State.ABANDONED)


def operations_recover(kinds: Iterable[str], recover: Callable[[Operation], object]) -> int:
    """Beat: `recover(operation)` for each operation of `kinds` started longer ago than
    OPERATION_RECOVERY_SECONDS (its process most likely died between asking the connector
    and writing the answer) and not waiting to be asked again, oldest first; -> how many were
    tried. One the connector cannot answer now stays `started`, is logged, and waits
    (`ask_again_at`) rather than being asked on every tick."""
    now = timezone.now()
    cutoff = now - datetime.timedelta(seconds=settings.OPERATION_RECOVERY_SECONDS)
    stale = Operation.objects.filter(state=STARTED, kind__in=list(kinds), created__lte=cutoff)
    waited = stale.filter(Q(retry_at__isnull=True) | Q(retry_at__lte=now))
    operations = list(waited.order_by("created")[:RECOVERY_BATCH])
    for operation in operations:
        try:
            recover(operation)
        except ServiceError as exc:
            log.error("could not recover %s: %s (%s)", operation.pk, exc.message, exc.code)
            ask_again_later(operation, "retry_at", state=STARTED)
    return len(operations)


def operations_purge() -> int:
    """Beat: finished operations older than OPERATION_RETENTION (docs/data.md "Retention"):
    past the 24-hour replay window no request resumes them, and recovery takes only `started`
    ones. Found by primary key (time-ordered ids); -> how many were deleted."""
    cutoff = timezone.now() - settings.OPERATION_RETENTION
    old = Operation.objects.filter(pk__lt=id_floor("op", cutoff), created__lt=cutoff)
    return purge_rows(old.exclude(state=STARTED), order="pk")
