"""The operation runner: the one place where a connector operation's phases run, for a
payment's operations and a refund's alike (docs/payments.md "Operation runner").

A create, step by step (`POST /v1/payments` with a token, on PostgreSQL; round trips to
PostgreSQL, counted by `bench/statements_per_create.py`; the pool's check of the connection
is a poll of its socket, no round trip: config/postgresql/base.py):

step      trips  what it does (where)
key         0    the API key from the per-process cache, its revision assumed, not read
                 (accounts.services._assumed_entry, infra.revision.assume); 1, the
                 configuration revision read, without an Idempotency-Key or a cached key
claim       0    the Idempotency-Key's claim made, not written (api.idempotency.
                 idempotency_defer): step 1 writes it
check       0    method, account and route checked (422 `no_route`); nothing written yet
                 (payments.services.payment_create); a refusal claims the key first
                 (api.views.ServiceAPIView._claimed_before_refusing)
1 start     1    the claim written (INSERT ... ON CONFLICT DO NOTHING, only if the revision
                 it reads is the one assumed), the token taken, the operation inserted
                 `started` with the claim's record id: one statement, its own transaction
                 (operation_start_taking, api.idempotency.claim_within,
                 payments.tokens.TokenTake); if the key is held already, or the revision
                 moved, nothing is written: the key is claimed as for any request (a
                 replay, 409, or the key's record resumed) and the create runs again
                 (api.views.ServiceAPIView.run_claimed)
2 ask       0    the connector asked, no transaction open, the operation's id as its
                 idempotency key (run, _ask, payments.steps.PaymentWork.ask); in test mode
                 the simulator first draws the merchant's failure profile (one UPDATE ...
                 RETURNING) only if its process knows or finds it has a share set
                 (sandbox.profiles.profile_draw)
3 apply     1    one chained statement: the operation marked applied, the payment and its
                 2 events inserted, the answer stored on the claim and the fan-out's
                 revision read (payments.steps._apply_create, api.idempotency.answer_storing,
                 events.services.fan_out_read); its own transaction in autocommit while its
                 process holds the merchant's endpoint list for the mode and it is empty,
                 the statement checking that the revision it is held under is still current
                 (events.services.fan_out_guard); else (or when that check fails and the
                 statement wrote nothing) BEGIN, the statement, the delivery rows, COMMIT:
                 3 round trips; 5 with endpoints: the endpoints' in-flight deliveries
                 read before the rows (webhooks.bulkhead: how many to nudge)
log       ~0.01  the request log's entry, batched by its writer thread
                 (api.request_recorder)

In all 2 round trips for a merchant without webhook endpoints in the mode (2 statements), 4
with a transaction, 6 with endpoints, test and live mode alike; one more each without an
Idempotency-Key (the revision read). Without a token (a pending card payment) no operation
runs: the key is claimed before the service, then one transaction inserts the payment, its
event and its answer (payments.services._create_pending); on SQLite, the key is claimed
before the service and step 1 is a transaction of its own (the token taken, then
`operation_start`).

The phases, of every operation:

1. start (`operation_start`, inside the caller's short transaction, under the payment's
   lock): the operation is recorded `started` under the request's Idempotency-Key claim;
2. ask (`run`): the connector is asked with no transaction open and no lock held, the
   operation's id as its idempotency key; if it could not be asked, the operation is
   abandoned and the error raised;
3. apply (`run`): one short transaction re-locks, applies the answer (status, events,
   delivery rows: the room's `Work.apply`), marks the operation applied and stores the
   answer's bytes on the claim (api.idempotency.answer_store); a create whose events fan
   out to nothing, one statement in autocommit instead (`Work.apply_alone`);
4. recover: a retry of a request that died mid-operation (`resumable`), or beat
   (payments.operations.operations_recover), asks again with the same key and applies.

The claim is an argument all the way down; a refusal (a capture the processor refused) is
a value until `run` raises it, once, to its caller.
"""

import functools
from collections.abc import Callable
from typing import Protocol

from django.db import transaction

from api.errors import ServiceError
from api.idempotency import (
    Claim,
    answer_store,
    claim_holding,
    claim_within,
    claim_written,
    taken_over,
)
from infra import failpoints
from infra.keyed import keyed_cursor
from infra.rows import (
    chained,
    insert_instances,
    insert_instances_if,
    insert_sql,
    instance_values,
    mark_stored,
    new_instance,
)
from payments import metrics
from payments.connectors import Connector, ConnectorInDoubt, connector_of
from payments.models import Operation, Payment
from payments.operations import operation_abandon, operation_of_claim


class Work(Protocol):
    """What one room's operation does; the runner owns when, and in which transaction."""

    payment: Payment  # the payment asked about: its connector, its lock

    def ask(self, connector: Connector, operation: Operation):
        """Step 2: the connector's answer (no transaction open)."""

    def apply(self, operation: Operation, answer, claim: Claim | None):
        """Step 3, inside its transaction: the answer written, the operation marked applied;
        -> the result (a payment, a refund) or a refusal (a ServiceError, not raised). May
        store the request's answer in its own statement (api.idempotency.answer_storing)."""

    def apply_alone(self, operation: Operation, answer, claim: Claim | None):
        """Step 3 as one statement in autocommit, its own transaction, where the work allows
        it (a create whose events fan out to nothing); -> the result, or None: nothing was
        written, and `apply` runs in a transaction."""

    def abandoned(self, operation: Operation) -> None:
        """Inside the transaction that abandons it: what the operation had taken is given
        back (a create's token)."""


def operation_new(
    kind: str,
    *,
    payment: Payment,
    request: dict,
    api_version: str | None,
    claim: Claim | None,
    refund_id: str | None = None,
) -> Operation:
    """Step 1's record, not yet written. A payment no connector serves (its live route
    removed) is refused first: an operation left `started` would be retried by recovery
    forever."""
    connector_of(payment)
    return new_instance(
        Operation,
        kind=kind,
        payment_id=payment.pk,
        refund_id=refund_id,
        request=request,
        api_version=api_version,
        idempotency_record_id=None if claim is None else claim.record_id,
    )


def operation_start(kind: str, *, claim: Claim | None, **values) -> Operation:
    """Step 1's record (operation_new), inside the caller's transaction, linked to the
    request's claim and inserted by the statement that checks the claim is still held (a
    request a retry took over starts nothing: 409, and the caller's transaction rolls
    back)."""
    operation = operation_new(kind, claim=claim, **values)
    if claim is None:
        insert_instances([operation])
    elif not insert_instances_if(claim_holding(claim), [operation]).changed:
        raise taken_over()
    return operation


def operation_start_taking(
    take: Callable[[str | None], tuple[str, list]], operation: Operation, claim: Claim | None
) -> tuple | None:
    """Step 1 of an operation that takes a row first (a create's token), as one statement on
    PostgreSQL, which in autocommit is its own transaction (no BEGIN, no COMMIT: one round
    trip instead of four): the request's claim written (a deferred one: `claim_within`) or its
    lease renewed while the request still holds its key, then `take(after)` (an UPDATE ...
    RETURNING of at most one row, which takes it only if the WITH part named `after` returned
    one), then `operation` inserted only if it took its row, linked to the claim's record.
    -> the row taken, or None (nothing written but a deferred claim). Raises taken_over() when
    a retry took over the claim, KeyNotClaimed when a deferred claim's key is held already
    (nothing written either)."""
    named, after, held, selected = [], None, "1, NULL", ()
    if claim is not None and claim.deferred:
        claimed, held = claim_within(claim)
        named, after = [claimed], "claimed"
        selected = (("idempotency_record_id", "claimed.id"),)
    elif claim is not None:
        sql, params = claim_holding(claim)
        named, after = [("changed", f"{sql} RETURNING 1", params)], "changed"
        held = "(SELECT count(*) FROM changed), NULL"
    named.append(("taken", *take(after)))
    start = insert_sql(
        Operation,
        [instance_values(operation)],
        select_tail=f"{'FROM claimed ' if selected else ''}WHERE EXISTS (SELECT FROM taken)",
        selected=selected,
    )
    answer = (f"SELECT {held}, taken.* FROM (SELECT 1) AS one LEFT JOIN taken ON true", [])
    with keyed_cursor() as cursor:
        cursor.execute(*chained(named, [start, answer]))
        held_value, current, *taken = cursor.fetchone()
    if claim is not None and claim.deferred:
        claim_written(claim, held_value, current)  # raises KeyNotClaimed: nothing written
        operation.idempotency_record_id = claim.record_id
    elif not held_value:
        raise taken_over()
    if taken[0] is None:
        return None
    mark_stored(operation)
    return tuple(taken)


def run(operation: Operation, work: Work, claim: Claim | None):
    """Steps 2 and 3 of an operation step 1 recorded; -> the result, or its refusal raised."""
    failpoints.reach(failpoints.OPERATION_STARTED)
    answer = _ask(operation, work)
    failpoints.reach(failpoints.CONNECTOR_ANSWERED)
    result = work.apply_alone(operation, answer, claim)
    if result is not None:
        answer_store(claim, result)  # written by its statement: only noted
    else:
        with transaction.atomic():
            result = work.apply(operation, answer, claim)
            answer_store(claim, result)
    failpoints.reach(failpoints.WORK_COMMITTED)
    if isinstance(result, ServiceError):
        raise result
    return result


def _ask(operation: Operation, work: Work):
    """If the connector could not be asked (it raised), nothing was processed: the operation
    is abandoned and the error goes to the caller. If it may have acted unheard
    (ConnectorInDoubt), the operation stays `started` for a retry or recovery to ask again
    with the same key."""
    payment = work.payment
    connector = connector_of(payment)
    try:
        with metrics.connector_call(connector, operation.kind, payment.livemode):
            return work.ask(connector, operation)
    except ConnectorInDoubt:
        raise
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
