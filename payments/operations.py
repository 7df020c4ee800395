"""The record of each connector call (payments.models.Operation): the three steps every call
about a payment or a refund takes (docs/payments.md "Connector operations"):

1. in a short transaction, under the payment's row lock, the change is checked and an
   operation is recorded `started` (`operation_start`), refused while another is in flight;
2. the connector is asked with no transaction open and no lock held, the operation's id as
   its idempotency key;
3. in a second short transaction, under the lock again, the answer is written with its events
   and the operation marked `applied` (`operation_apply`: exactly one writer gets to).

A process that dies between 2 and 3 leaves the operation `started`; beat asks the connector
again with the same key and applies the answer (`operations_to_recover`).
"""

import datetime
import functools
import logging
from collections.abc import Callable, Iterable

from django.conf import settings
from django.utils import timezone

from api.errors import ProcessingFailed, ServiceError
from api.idempotency import held_claim_id, insert_while_held
from api.ids import id_floor
from infra.retention import purge_rows
from infra.rows import Columns, changed_a_row
from payments.models import Operation

STARTED = Operation.State.STARTED
RECOVERY_BATCH = 200  # the next tick takes the rest

log = logging.getLogger(__name__)


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


def operation_start(
    kind: str,
    *,
    payment_id: str,
    request: dict,
    api_version: str | None,
    refund_id: str | None = None,
) -> Operation:
    """Step 1's record, inside the caller's transaction, linked to the request's
    Idempotency-Key claim and inserted by the statement that checks the claim is still held
    (a request a retry took over starts nothing)."""
    operation = Operation(
        kind=kind,
        payment_id=payment_id,
        refund_id=refund_id,
        request=request,
        api_version=api_version,
        idempotency_record_id=held_claim_id(),
    )
    insert_while_held([operation])
    return operation


def operation_of_claim(record_id: int) -> Operation | None:
    """The operation a request with this Idempotency-Key claim started and did not abandon:
    the one its retry resumes."""
    linked = Operation.objects.filter(idempotency_record_id=record_id)
    return linked.exclude(state=Operation.State.ABANDONED).order_by("-created").first()


def resumable(claim, work: Callable[[], object], recover: Callable[[Operation], object]):
    """What a request runs: `work`, or, when it is the retry of a request that died after
    starting a connector operation (its Idempotency-Key claim taken over, `claim.resumed`),
    `recover(that operation)`: the connector asked again with the same key and the answer
    applied, instead of running again (which would meet, say, its own spent token)."""
    if claim is None or not claim.resumed:
        return work
    operation = operation_of_claim(claim.record_id)
    if operation is None:
        return work
    return lambda: recover(operation)


@functools.cache
def _mark_sql() -> str:
    """The states are literals (plain words of ours), the id the one parameter: a create's
    chained statement then keeps to the 50 parameters up to which psycopg caches its parsing
    of a statement's text (~0.2 ms of CPU a create)."""
    o = Columns(Operation)
    applied, started = (f"'{state.value}'" for state in (Operation.State.APPLIED, STARTED))
    return f"UPDATE {o.table} SET {o.state} = {applied} WHERE {o.id} = %s AND {o.state} = {started}"


def operation_applying(operation: Operation) -> tuple[str, list]:
    """-> (sql, params) of the UPDATE that marks the operation applied if it is still
    `started`: it changes a row for exactly one writer. By hand, as it runs on every
    operation; `operation_apply` runs it, a create chains its inserts to it."""
    return _mark_sql(), [operation.pk]


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
    and writing the answer), oldest first; -> how many were tried. One the connector cannot
    answer now stays `started` for the next tick and is logged."""
    cutoff = timezone.now() - datetime.timedelta(seconds=settings.OPERATION_RECOVERY_SECONDS)
    stale = Operation.objects.filter(state=STARTED, kind__in=list(kinds), created__lte=cutoff)
    operations = list(stale.order_by("created")[:RECOVERY_BATCH])
    for operation in operations:
        try:
            recover(operation)
        except ServiceError as exc:
            log.error("could not recover %s: %s (%s)", operation.pk, exc.message, exc.code)
    return len(operations)


def operations_purge() -> int:
    """Beat: finished operations older than OPERATION_RETENTION (docs/data.md "Retention"):
    past the 24-hour replay window no request resumes them, and recovery takes only `started`
    ones. Found by primary key (time-ordered ids); -> how many were deleted."""
    cutoff = timezone.now() - settings.OPERATION_RETENTION
    old = Operation.objects.filter(pk__lt=id_floor("op", cutoff), created__lt=cutoff)
    return purge_rows(old.exclude(state=STARTED), order="pk")
