"""Writes for payments (docs/payments.md "Operation runner", "Concurrency"): the services
views, admin actions, commands and tasks call, with plain values (and, from a view, the
request's Idempotency-Key claim).

A status change that asks a connector is an operation the runner runs (payments.runner):
here its first short transaction (lock, check the transition, record the operation), then
`run` asks the connector with no transaction open and applies the answer in a second one
(payments.steps). A change with no connector call (expiry, cancel of a payment still
waiting) is one transaction, `_change`. While an operation is in flight the payment is busy:
no other change may begin, so exactly one caller reaches the connector.
"""

import logging

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.models import Merchant
from api.errors import ProcessingFailed, ServiceError, ValidationFailed
from api.idempotency import Claim, answer_store
from events.services import events_written, new_events
from infra.rows import insert_instances, new_instance
from payments import metrics
from payments.connectors import connector_of
from payments.fees import parse_schedule
from payments.methods import Method, get_method
from payments.models import Operation, Payment
from payments.operations import ask_again_later
from payments.runner import (
    operation_new,
    operation_start,
    operation_start_taking,
    resumable,
    run,
)
from payments.states import Status, Trigger, check_transition
from payments.steps import CREATE_FIELDS, TRIGGERS, PaymentWork, payment_operation_recover
from payments.tokens import TokenTake, card_of, token_take
from payments.writes import (
    AUTOMATIC,
    enter,
    event_values,
    lifetime_over,
    lock_for,
    write_change,
)

Kind = Operation.Kind

log = logging.getLogger(__name__)


def _change(payment: Payment, trigger: Trigger, target: Status, *, api_version) -> Payment:
    """A status change with no connector call (expiry, cancel of a payment still waiting):
    lock, check, write, emit, in one transaction."""
    with transaction.atomic():
        locked = lock_for(payment, trigger)
        write_change(locked, trigger, target, api_version)
    return locked


def _expire_if_lapsed(payment: Payment, api_version: str | None) -> Payment:
    """A payment whose lifetime is over is expired before any action meets it (spec "Payment
    statuses": pending and requires_action after 1 hour, authorized after 7 days): a capture
    must never take an authorization that lapsed a moment before the sweep came, nor a cancel
    void one. The expiry is committed; the action is then refused as for any expired one."""
    if lifetime_over(payment, timezone.now()):
        return payment_expire(payment=payment, api_version=api_version)
    return payment


def _check_account(merchant: Merchant, amount: int) -> None:
    """Before anything is spent: the per-transaction limit, and a pricing schedule that fees
    can be computed from (a malformed one is an operator fault: 500, nothing processed)."""
    parse_schedule(merchant.pricing)
    limit = merchant.transaction_limit
    if limit is None:
        limit = settings.PAYMENT_TRANSACTION_LIMIT  # the documented default (docs/methods.md)
    if amount > limit:
        raise ProcessingFailed(
            f"The amount {amount} is above this account's per-transaction limit of {limit}.",
            code="amount_above_limit",
        )


def _take_token(payment: Payment, method: Method, token_id: str) -> None:
    """Inside step 1's transaction: the token is spent on this payment (or refused)."""
    token = token_take(
        merchant=payment.merchant, livemode=payment.livemode, token_id=token_id, method=method
    )
    payment.token = token
    payment.card = card_of(token, method)


@resumable(payment_operation_recover)
def payment_create(
    *,
    merchant: Merchant,
    livemode: bool,
    amount: int,
    currency: str,
    reference: str,
    method_type: str,
    token_id: str | None = None,
    capture_method: str = AUTOMATIC,
    description: str | None = None,
    customer: dict | None = None,
    return_url: str | None = None,
    statement_descriptor: str | None = None,
    metadata: dict | None = None,
    api_version: str | None = None,
    claim: Claim | None = None,
    request_id: str | None = None,
) -> Payment:
    """Create a payment; with a token, or for a method paid without one, it is authorized (and
    maybe captured) in the same call: the token is spent and the operation recorded in one
    transaction, the connector asked outside any, and the payment inserted with its events
    and the connector's answer in a second one.

    A decline or a processing failure is a payment too: it is committed with its events and
    returned; the caller reports it by HTTP status (spec "POST /v1/payments").
    """
    method = get_method(method_type)
    if token_id is not None and not method.card_like:
        raise ValidationFailed(
            f"{method.name} is paid without a token.", param="payment_method.token"
        )
    _check_account(merchant, amount)
    payment = new_instance(
        Payment,
        # The request's moment, as its id's (made here too), not the connector's answer's: a
        # `created` window is then an id window (payments.selectors.payment_list).
        created=timezone.now(),
        merchant=merchant,
        livemode=livemode,
        amount=amount,
        currency=currency,
        reference=reference,
        description=description,
        capture_method=capture_method,
        method_type=method.name,
        customer=(customer or {}).get("id"),
        customer_details=customer or None,
        return_url=return_url,
        statement_descriptor=statement_descriptor,
        metadata=metadata or {},
        request_id=request_id,
    )
    connector_of(payment)  # 422 `no_route` before anything is written
    if token_id is None and method.card_like:
        return _create_pending(payment, api_version, claim)
    payment.token_id = token_id
    values = {field: getattr(payment, field) for field in CREATE_FIELDS}
    start = {"payment": payment, "request": values, "api_version": api_version, "claim": claim}
    if claims_in_step_one(token_id):
        operation = operation_new(Kind.CREATE, **start)
        _start_spending_token(operation, payment, method, claim)
    else:
        with transaction.atomic():
            if token_id is not None:
                _take_token(payment, method, token_id)
            operation = operation_start(Kind.CREATE, **start)
    return run(operation, PaymentWork(payment), claim)


def claims_in_step_one(token_id: str | None) -> bool:
    """Whether payment_create's step 1 is one statement that can also write the request's
    deferred claim (api.idempotency.claim_within): a create with a token, on PostgreSQL."""
    return token_id is not None and connection.vendor == "postgresql"


def _start_spending_token(
    operation: Operation, payment: Payment, method: Method, claim: Claim | None
) -> None:
    """A create's step 1 on PostgreSQL: the token spent and the operation recorded behind the
    claim in one statement, its own transaction (payments.runner.operation_start_taking)."""
    take = TokenTake(payment.merchant, payment.livemode, payment.token_id, method, timezone.now())
    row = operation_start_taking(take.statement, operation, claim)
    if row is None:
        raise take.refusal()
    payment.token = take.token(row)
    payment.card = card_of(payment.token, method)


def _create_pending(payment: Payment, api_version: str | None, claim: Claim | None) -> Payment:
    """A card-like payment without a token waits for its confirm: no connector call. The
    payments room inserts it with its event, and its answer, in one transaction."""
    with transaction.atomic():
        enter(payment, Status.PENDING, timezone.now())
        check_transition(None, Trigger.CREATE, Status.PENDING)
        events = new_events(**event_values(payment, ["payment.created"], None, api_version))
        insert_instances([payment, *events])
        events_written(events)
        metrics.payment_entered(payment, Trigger.CREATE)
        answer_store(claim, payment)
    return payment


def _operate(
    payment: Payment, kind: str, request: dict, api_version, claim: Claim | None, check=None
) -> Payment:
    """An operation on an existing payment: step 1 here (lock, check the transition, record
    the operation; one short transaction), then the runner. `check(locked)` runs under the
    lock, may refuse, and returns more of what is asked (the amount to capture, the token
    spent)."""
    payment = _expire_if_lapsed(payment, api_version)
    with transaction.atomic():
        locked = lock_for(payment, TRIGGERS[kind])
        if check is not None:
            request = {**request, **check(locked)}
        operation = operation_start(
            kind, payment=locked, request=request, api_version=api_version, claim=claim
        )
    return run(operation, PaymentWork(locked), claim)


@resumable(payment_operation_recover)
def payment_confirm(
    *,
    payment: Payment,
    method_type: str,
    token_id: str,
    api_version: str | None = None,
    claim: Claim | None = None,
) -> Payment:
    """Attach a token to a pending payment and authorize it (the two-step flow). The token is
    spent in step 1, after the payment's status is checked."""
    method = get_method(method_type)
    if method.name != payment.method_type:
        raise ValidationFailed(
            f"This payment was created for {payment.method_type}, not {method.name}.",
            param="payment_method.type",
        )

    def spend_token(locked: Payment) -> dict:
        _take_token(locked, method, token_id)
        return {"token_id": locked.token.pk, "card": locked.card}

    return _operate(payment, Kind.CONFIRM, {}, api_version, claim, check=spend_token)


# --- after authorization ---------------------------------------------------------------------


def payment_complete_action(
    *, payment: Payment, details: dict, api_version: str | None = None
) -> Payment:
    """The payer finished (or abandoned) the challenge; `details` go to the connector."""
    return _operate(payment, Kind.PAYER_ACTION, {"details": details}, api_version, None)


@resumable(payment_operation_recover)
def payment_resolve(
    *, payment: Payment, api_version: str | None = None, claim: Claim | None = None
) -> Payment:
    """Settle a processing payment now (sandbox advance, a read after its time, beat)."""
    return _operate(payment, Kind.RESOLVE, {}, api_version, claim)


def payment_resolve_if_due(*, payment: Payment, api_version: str | None = None) -> Payment:
    """Resolve a processing payment whose time has come; anything else is returned as is.

    Idempotent: a payment resolved meanwhile (by advance, a read or beat), or being resolved
    right now, is left alone.
    """
    if payment.status != Status.PROCESSING or not payment.due_at or payment.due_at > timezone.now():
        return payment
    try:
        return payment_resolve(payment=payment, api_version=api_version)
    except ProcessingFailed as exc:
        if exc.code not in ("payment_not_advanceable", "payment_in_progress"):
            raise
        if exc.code == "payment_not_advanceable":
            payment_ask_again_later(payment)
        payment.refresh_from_db()
        return payment


def payment_ask_again_later(payment: Payment) -> None:
    """Still processing at the processor, or the processor could not be asked (beat's
    sweep): the next ask waits (payments.operations.ask_again_at) rather than being made on
    every beat tick and every read. A payment settled meanwhile is left alone."""
    ask_again_later(payment, "due_at", status=Status.PROCESSING, due_at__lte=timezone.now())


def payment_as_of_now(*, payment: Payment, api_version: str | None = None) -> Payment:
    """The payment as time has already made it, for a read: past its resolve time a processing
    payment is resolved, past its lifetime a pending, requires_action or authorized one is
    expired, before anyone sees it (so a read agrees with what an action would meet)."""
    if lifetime_over(payment, timezone.now()):
        return payment_expire(payment=payment, api_version=api_version)
    try:
        return payment_resolve_if_due(payment=payment, api_version=api_version)
    except ServiceError as exc:
        # A read answers with what is stored: one payment the connector cannot settle now
        # must not fail a retrieve, nor every page of a list. It stays processing and due;
        # beat's resolve sweep asks again (nothing is left `started`: see payments.runner).
        log.warning("read shows %s processing: %s (%s)", payment.pk, exc.message, exc.code)
        return payment


@resumable(payment_operation_recover)
def payment_capture(
    *,
    payment: Payment,
    amount: int | None = None,
    api_version: str | None = None,
    claim: Claim | None = None,
) -> Payment:
    """Capture all of an authorization, or once a part of it (the rest is released).

    A refused capture leaves the payment authorized, emits `payment.capture_failed` and is
    422 `capture_failed`.
    """

    def amount_to_capture(locked: Payment) -> dict:
        to_capture = locked.amount if amount is None else amount
        if to_capture > locked.amount:
            raise ValidationFailed(
                f"amount {to_capture} is above the authorized amount {locked.amount}.",
                param="amount",
            )
        return {"amount": to_capture}

    return _operate(payment, Kind.CAPTURE, {}, api_version, claim, check=amount_to_capture)


@resumable(payment_operation_recover)
def payment_cancel(
    *, payment: Payment, api_version: str | None = None, claim: Claim | None = None
) -> Payment:
    """Void an authorization, or cancel a payment still waiting (pending, requires_action)."""
    payment = _expire_if_lapsed(payment, api_version)
    with transaction.atomic():
        locked = lock_for(payment, Trigger.CANCEL)
        if locked.status != Status.AUTHORIZED:  # nothing authorized: no connector call
            write_change(locked, Trigger.CANCEL, Status.CANCELED, api_version)
            answer_store(claim, locked)
            return locked
        operation = operation_start(
            Kind.VOID, payment=locked, request={}, api_version=api_version, claim=claim
        )
    return run(operation, PaymentWork(locked), claim)


def payment_expire(*, payment: Payment, api_version: str | None = None) -> Payment:
    """Expire a payment whose lifetime has elapsed; idempotent (beat may run twice)."""
    try:
        return _change(payment, Trigger.EXPIRE, Status.EXPIRED, api_version=api_version)
    except ProcessingFailed:
        # Moved on meanwhile (confirmed, captured, canceled), not due, or busy: nothing to do.
        payment.refresh_from_db()
        return payment
