"""The operation runner: the one place where a connector operation's phases run, for a
payment's operations and a refund's alike (docs/payments.md "Operation runner").

1. start (`operation_start`, inside the caller's short transaction, under the payment's
   lock): the operation is recorded `started` under the request's Idempotency-Key claim;
2. ask (`run`): the connector is asked with no transaction open and no lock held, the
   operation's id as its idempotency key; if it could not be asked, the operation is
   abandoned and the error raised;
3. apply (`run`): one short transaction re-locks, applies the answer (status, events,
   delivery rows: the room's `Work.apply`), marks the operation applied and stores the
   answer's bytes on the claim (api.idempotency.answer_store);
4. recover: a retry of a request that died mid-operation (`resumable`), or beat
   (payments.operations.operations_recover), asks again with the same key and applies.

The claim is an argument all the way down; a refusal (a capture the processor refused) is
a value until `run` raises it, once, to its caller.
"""

import functools
from typing import Protocol

from django.db import transaction

from api.errors import ServiceError
from api.idempotency import Claim, answer_store, claim_holding, taken_over
from infra import failpoints
from infra.rows import insert_instances, insert_instances_if
from payments import metrics
from payments.connectors import Connector, connector_of
from payments.models import Operation, Payment
from payments.operations import operation_abandon, operation_of_claim


class Work(Protocol):
    """What one room's operation does; the runner owns when, and in which transaction."""

    payment: Payment  # the payment asked about: its connector, its lock

    def ask(self, connector: Connector, operation: Operation):
        """Step 2: the connector's answer (no transaction open)."""

    def apply(self, operation: Operation, answer):
        """Step 3, inside its transaction: the answer written, the operation marked applied;
        -> the result (a payment, a refund) or a refusal (a ServiceError, not raised)."""

    def abandoned(self, operation: Operation) -> None:
        """Inside the transaction that abandons it: what the operation had taken is given
        back (a create's token)."""


def operation_start(
    kind: str,
    *,
    payment: Payment,
    request: dict,
    api_version: str | None,
    claim: Claim | None,
    refund_id: str | None = None,
) -> Operation:
    """Step 1's record, inside the caller's transaction, linked to the request's claim and
    inserted by the statement that checks the claim is still held (a request a retry took
    over starts nothing: 409, and the caller's transaction rolls back). A payment no
    connector serves (its live route removed) is refused first: an operation left `started`
    would be retried by recovery forever."""
    connector_of(payment)
    operation = Operation(
        kind=kind,
        payment_id=payment.pk,
        refund_id=refund_id,
        request=request,
        api_version=api_version,
        idempotency_record_id=None if claim is None else claim.record_id,
    )
    if claim is None:
        insert_instances([operation])
    elif not insert_instances_if(claim_holding(claim), [operation]):
        raise taken_over()
    return operation


def run(operation: Operation, work: Work, claim: Claim | None):
    """Steps 2 and 3 of an operation step 1 recorded; -> the result, or its refusal raised."""
    failpoints.reach(failpoints.OPERATION_STARTED)
    answer = _ask(operation, work)
    failpoints.reach(failpoints.CONNECTOR_ANSWERED)
    with transaction.atomic():
        result = work.apply(operation, answer)
        answer_store(claim, result)
    failpoints.reach(failpoints.WORK_COMMITTED)
    if isinstance(result, ServiceError):
        raise result
    return result


def _ask(operation: Operation, work: Work):
    """If the connector could not be asked (it raised), nothing was processed: the operation
    is abandoned and the error goes to the caller."""
    payment = work.payment
    connector = connector_of(payment)
    try:
        with metrics.connector_call(connector, operation.kind, payment.livemode):
            return work.ask(connector, operation)
    except ServiceError:
        with transaction.atomic():
            operation_abandon(operation)
            work.abandoned(operation)
        raise


def resumable(recover):
    """For a service taking `claim`: the retry of a request that died after starting its
    operation (its claim `resumed`) runs `recover(that operation, claim=...)` (the connector
    asked again with the same key, the answer applied) instead of running again, which would
    meet, say, its own spent token."""

    def decorate(service):
        @functools.wraps(service)
        def resuming(*, claim: Claim | None = None, **values):
            operation = None
            if claim is not None and claim.resumed:
                operation = operation_of_claim(claim.record_id)
            if operation is None:
                return service(claim=claim, **values)
            return recover(operation, claim=claim)

        return resuming

    return decorate
