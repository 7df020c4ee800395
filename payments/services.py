"""Writes for payments (docs/payments.md "Connector operations", "Concurrency").

A status change that asks a connector is an operation in three steps (payments.operations):
a short transaction locks the payment, checks the transition and records the operation; the
connector is asked with no transaction open and no lock held; a second short transaction
writes the answer under the lock with its events (spec "States and transitions": a status a
client can read has produced its event). A change with no connector call (expiry, cancel of
a payment still waiting) is one transaction, `_change`. While an operation is in flight the
payment is busy: no other change may begin, so exactly one caller reaches the connector.
"""

import datetime
import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Merchant
from api.errors import ProcessingFailed, ServiceError, ValidationFailed
from api.idempotency import answer_with_work
from events.services import emit_all, previous_attributes
from infra import failpoints
from payments import metrics
from payments.connectors import Authorization, Refusal, Result, connector_of, route
from payments.fees import fees_for, parse_schedule
from payments.methods import Method, get_method
from payments.models import Operation, Payment, Token, empty_outcome
from payments.operations import (
    operation_abandon,
    operation_apply,
    operation_applying,
    operation_start,
    refuse_if_busy,
)
from payments.serializers import payment_to_dict
from payments.states import LIFETIMES, STATUS_EVENTS, Status, Trigger, check_transition
from payments.tokens import card_of, token_release, token_take

AUTOMATIC = Payment.CaptureMethod.AUTOMATIC

log = logging.getLogger(__name__)


# --- applying results ------------------------------------------------------------------------


def _enter(payment: Payment, status: Status, now: datetime.datetime) -> None:
    payment.status = status
    lifetime = LIFETIMES.get(status)
    payment.due_at = now + lifetime if lifetime else None
    if status != Status.REQUIRES_ACTION:
        payment.next_action = None


def _take_capture(payment: Payment, amount: int, now: datetime.datetime) -> None:
    """Captured: amount taken, and fees snapshotted once (never recalculated)."""
    payment.amount_captured = amount
    payment.captured_at = now
    payment.fees = fees_for(
        pricing=payment.merchant.pricing,
        amount=amount,
        currency=payment.currency,
        brand=(payment.card or {}).get("brand"),
    )


def _take_authorization(payment: Payment, auth: Authorization, now: datetime.datetime) -> Status:
    """Write a connector's answer onto the payment; -> the status it lands in."""
    payment.outcome = {**empty_outcome(), **auth.outcome}
    if auth.details is not None:
        payment.method_details = auth.details
    if auth.result == Result.APPROVED:
        payment.authorized_at = now
        if payment.capture_method == AUTOMATIC:
            _take_capture(payment, payment.amount, now)
            status = Status.CAPTURED
        else:
            status = Status.AUTHORIZED
    else:
        status = Status(auth.result)
    _enter(payment, status, now)
    if status == Status.REQUIRES_ACTION:
        payment.next_action = {
            "type": "redirect",
            "redirect": {"url": auth.redirect_url, "return_url": payment.return_url},
        }
    if status == Status.PROCESSING:
        payment.due_at = now + auth.resolve_after
    return status


def _status_event(payment: Payment) -> str | None:
    if payment.status == Status.CAPTURED and payment.amount_captured < payment.amount:
        return "payment.partially_captured"
    return STATUS_EVENTS.get(payment.status)


def _emit(
    payment: Payment,
    types: list[str],
    before: dict | None,
    api_version: str | None,
    *,
    new: bool = False,
    only_if: tuple[str, list] | None = None,
) -> list:
    """The events of `types` about the payment as it is now; `new`: the payment is not stored
    yet and is inserted with them; `only_if`: see emit_all (-> [] when nothing was written)."""
    after = payment_to_dict(payment)
    return emit_all(
        merchant=payment.merchant,
        livemode=payment.livemode,
        types=types,
        obj=after,
        previous_attributes=previous_attributes(before, after),
        api_version=api_version,
        new_resource=payment if new else None,
        only_if=only_if,
    )


def payment_lock(payment: Payment) -> Payment:
    """The payment row, locked until the caller's transaction ends (every writer locks it
    first, so racing writers serialise)."""
    return (
        Payment.objects.select_for_update(of=("self",))
        .select_related("merchant")
        .get(pk=payment.pk)
    )


def _lifetime_over(payment: Payment, now: datetime.datetime) -> bool:
    """Its time in a status with a lifetime (pending, requires_action, authorized) has run out,
    whether or not the expiry sweep (every 60 s) has reached it yet."""
    return payment.status in LIFETIMES and payment.due_at is not None and payment.due_at <= now


def _expire_if_lapsed(payment: Payment, api_version: str | None) -> Payment:
    """A payment whose lifetime is over is expired before any action meets it (spec "Payment
    statuses": pending and requires_action after 1 hour, authorized after 7 days): a capture
    must never take an authorization that lapsed a moment before the sweep came, nor a cancel
    void one. The expiry is committed; the action is then refused as for any expired one."""
    if _lifetime_over(payment, timezone.now()):
        return payment_expire(payment=payment, api_version=api_version)
    return payment


def _lock_for(payment: Payment, trigger: Trigger) -> Payment:
    """Inside the caller's transaction: the payment locked, idle (no connector call in
    flight) and in a status `trigger` starts from. One that lapsed since the caller looked is
    refused as expired (the sweep or the next read writes the expiry)."""
    locked = payment_lock(payment)
    refuse_if_busy(locked.pk)
    if trigger != Trigger.EXPIRE and _lifetime_over(locked, timezone.now()):
        check_transition(Status.EXPIRED, trigger)
    check_transition(locked.status, trigger)
    return locked


def _save_and_emit(locked: Payment, trigger: Trigger, before: dict, api_version) -> None:
    check_transition(before["status"], trigger, locked.status)
    locked.save()
    _emit(locked, [_status_event(locked)], before, api_version)
    metrics.payment_entered(locked, trigger)


def _change(payment: Payment, trigger: Trigger, target: Status, *, api_version) -> Payment:
    """A status change with no connector call (expiry, cancel of a payment still waiting):
    lock, check, write, emit, in one transaction."""
    with transaction.atomic():
        locked = _lock_for(payment, trigger)
        _write_change(locked, trigger, target, api_version)
    return locked


def _write_change(locked: Payment, trigger: Trigger, target: Status, api_version) -> None:
    now = timezone.now()
    if trigger == Trigger.EXPIRE and not _lifetime_over(locked, now):
        raise ProcessingFailed("Not due yet.", code="payment_not_expirable")
    before = payment_to_dict(locked)
    if target == Status.CANCELED:
        locked.canceled_at = now
    _enter(locked, target, now)
    _save_and_emit(locked, trigger, before, api_version)


def payment_refund_succeeded(*, locked: Payment, amount: int) -> None:
    """Count a succeeded refund of `amount`: `amount_refunded` grows and the status moves to
    `partially_refunded` or, once everything captured is refunded, `refunded`.

    Runs inside the caller's transaction on a row it got from `payment_lock`. The spec's
    catalogue has no payment event for these statuses: the caller's `refund.succeeded`,
    written in the same transaction, reports the change (docs/refunds.md "Events").
    """
    refunded = locked.amount_refunded + amount
    target = Status.REFUNDED if refunded >= locked.amount_captured else Status.PARTIALLY_REFUNDED
    check_transition(locked.status, Trigger.REFUND, target)
    locked.amount_refunded = refunded
    locked.status = target
    locked.save(update_fields=["amount_refunded", "status"])
    metrics.payment_entered(locked, Trigger.REFUND)


# --- connector operations (payments.operations: start, ask, apply) ----------------------------

Kind = Operation.Kind
TRIGGERS = {
    Kind.CREATE: Trigger.CREATE,
    Kind.CONFIRM: Trigger.CONFIRM,
    Kind.PAYER_ACTION: Trigger.PAYER_ACTION,
    Kind.RESOLVE: Trigger.RESOLVE,
    Kind.CAPTURE: Trigger.CAPTURE,
    Kind.VOID: Trigger.CANCEL,
}
# The values a create's operation keeps of its payment: enough to insert it with the answer.
CREATE_FIELDS = (
    "id",
    "merchant_id",
    "livemode",
    "amount",
    "currency",
    "reference",
    "description",
    "capture_method",
    "method_type",
    "card",
    "customer",
    "customer_details",
    "return_url",
    "statement_descriptor",
    "metadata",
    "token_id",
)


@dataclass(frozen=True)
class Applied:
    """What an operation's answer did: the payment as written, and the connector's refusal of
    a capture or void (nothing moved; the caller reports it)."""

    payment: Payment
    refusal: Refusal | None = None


def _ask(operation: Operation, payment: Payment):
    """Step 2: the connector's answer, asked with no transaction open and no lock held. If it
    could not be asked (it raised), nothing was processed: the operation is abandoned (a
    create's token given back) and the error goes to the caller."""
    connector, key, request = connector_of(payment), operation.pk, operation.request
    try:
        with metrics.connector_call(connector, operation.kind, payment.livemode):
            return _call(connector, operation, payment, key, request)
    except ServiceError:
        with transaction.atomic():
            operation_abandon(operation)
            if payment.token is not None and operation.kind in (Kind.CREATE, Kind.CONFIRM):
                token_release(payment.token)
        raise


def _call(connector, operation: Operation, payment: Payment, key: str, request: dict):
    match operation.kind:
        case Kind.CREATE | Kind.CONFIRM:
            return connector.authorize(payment=payment, token=payment.token, key=key)
        case Kind.PAYER_ACTION:
            details = request["details"]
            return connector.complete_action(payment=payment, details=details, key=key)
        case Kind.RESOLVE:
            return connector.resolve(payment=payment, key=key)
        case Kind.CAPTURE:
            return connector.capture(payment=payment, amount=request["amount"], key=key)
        case Kind.VOID:
            return connector.void(payment=payment, key=key)
    raise ValueError(f"not a payment operation: {operation.kind}")


def _apply(operation: Operation, payment: Payment, answer) -> Applied:
    """Step 3: write the answer, its events, the operation's end and (for an idempotent
    request) the response in one transaction, under the payment's lock. A second writer
    (recovery racing the original request) finds the operation applied and gets the payment
    as it stands."""
    with transaction.atomic():
        if operation.kind == Kind.CREATE:
            applied = _apply_create(operation, payment, answer)
        else:
            applied = _apply_change(operation, payment, answer)
        answer_with_work(lambda: _outcome(operation, applied))
    return applied


def _apply_change(operation: Operation, payment: Payment, answer) -> Applied:
    locked = payment_lock(payment)
    if not operation_apply(operation):
        return Applied(locked)
    now, before = timezone.now(), payment_to_dict(locked)
    match operation.kind:
        case Kind.CAPTURE | Kind.VOID if answer is not None:  # a Refusal
            if operation.kind == Kind.CAPTURE:  # the spec reports it as an event
                _emit(locked, ["payment.capture_failed"], before, operation.api_version)
            return Applied(locked, refusal=answer)
        case Kind.CAPTURE:
            _take_capture(locked, operation.request["amount"], now)
            _enter(locked, Status.CAPTURED, now)
        case Kind.VOID:
            locked.canceled_at = now
            _enter(locked, Status.CANCELED, now)
        case Kind.CONFIRM:
            locked.token, locked.card = payment.token, operation.request["card"]
            _take_authorization(locked, answer, now)
        case _:
            _take_authorization(locked, answer, now)
    _save_and_emit(locked, TRIGGERS[operation.kind], before, operation.api_version)
    return Applied(locked)


def _outcome(operation: Operation, applied: Applied) -> Payment:
    """What the caller gets: the payment, or 422 `capture_failed` / `void_failed` when the
    processor refused (the refusal is committed first, with its event)."""
    if applied.refusal is not None:
        action = operation.kind  # capture or void
        raise ProcessingFailed(
            f"The {action} of {applied.payment.id} was refused: {applied.refusal.reason} "
            "The payment stays authorized.",
            code=f"{action}_failed",
        )
    return applied.payment


def _apply_create(operation: Operation, payment: Payment, answer: Authorization) -> Applied:
    now = timezone.now()
    target = _take_authorization(payment, answer, now)
    check_transition(None, Trigger.CREATE, target)
    # payment.created for every new payment, then the event of the status it landed in; all
    # inserted by the statement that marks the operation applied, only if it does.
    types = ["payment.created", _status_event(payment)]
    applying = operation_applying(operation)
    if not _emit(payment, types, None, operation.api_version, new=True, only_if=applying):
        return Applied(Payment.objects.select_related("merchant").get(pk=payment.pk))
    metrics.payment_entered(payment, Trigger.CREATE)
    return Applied(payment)


def _operate(operation: Operation, payment: Payment) -> Payment:
    """Steps 2 and 3 of an operation step 1 recorded; -> the outcome (see `_outcome`)."""
    failpoints.reach(failpoints.OPERATION_STARTED)
    answer = _ask(operation, payment)
    failpoints.reach(failpoints.CONNECTOR_ANSWERED)
    applied = _apply(operation, payment, answer)
    failpoints.reach(failpoints.WORK_COMMITTED)
    return _outcome(operation, applied)


def _subject(operation: Operation) -> Payment:
    """The payment as the operation's connector call saw it, rebuilt from the records alone
    (for recovery): a create's payment from its operation, a confirm's with its token."""
    request = operation.request
    if operation.kind == Kind.CREATE:
        payment = Payment(**{field: request[field] for field in CREATE_FIELDS})
        payment.merchant = Merchant.objects.get(pk=payment.merchant_id)
        payment.created = operation.created  # its request's moment, not the recovery's
    else:
        payment = Payment.objects.select_related("merchant", "token").get(pk=operation.payment_id)
    if operation.kind == Kind.CONFIRM:
        payment.token = Token.objects.get(pk=request["token_id"])
        payment.card = request["card"]
    return payment


def payment_operation_recover(operation: Operation) -> Payment:
    """Finish an operation left `started` (its process died after asking the connector, or
    before): ask again with the same key, which the connector answers as the first time,
    and apply the answer. A ServiceError leaves it for the next try (or abandons it, if the
    connector says nothing was processed)."""
    return _operate(operation, _subject(operation))


# --- create and confirm ----------------------------------------------------------------------


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
    route(merchant_id=merchant.pk, livemode=livemode, method=method, currency=currency)
    payment = Payment(
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
    )
    if token_id is None and method.card_like:
        return _create_pending(payment, api_version)
    with transaction.atomic():
        if token_id is not None:
            _take_token(payment, method, token_id)
        values = {field: getattr(payment, field) for field in CREATE_FIELDS}
        operation = operation_start(
            Kind.CREATE, payment_id=payment.pk, request=values, api_version=api_version
        )
    return _operate(operation, payment)


def _create_pending(payment: Payment, api_version: str | None) -> Payment:
    """A card-like payment without a token waits for its confirm: no connector call."""
    with transaction.atomic():
        now = timezone.now()
        _enter(payment, Status.PENDING, now)
        check_transition(None, Trigger.CREATE, Status.PENDING)
        _emit(payment, ["payment.created"], None, api_version, new=True)
        metrics.payment_entered(payment, Trigger.CREATE)
        answer_with_work(lambda: payment)
    return payment


def _start(
    payment: Payment, kind: str, request: dict, api_version: str | None, *, check=None
) -> tuple[Operation, Payment]:
    """Step 1 of an operation on an existing payment: lock, check the transition, record the
    operation; one short transaction. `check(locked)` runs under the lock, may refuse, and
    returns more of what is asked (the amount to capture, the token spent)."""
    payment = _expire_if_lapsed(payment, api_version)
    with transaction.atomic():
        locked = _lock_for(payment, TRIGGERS[kind])
        if check is not None:
            request = {**request, **check(locked)}
        # A payment no connector serves any more (its live route removed) is refused before
        # an operation is recorded: one left `started` would be retried by recovery forever.
        connector_of(locked)
        operation = operation_start(
            kind, payment_id=locked.pk, request=request, api_version=api_version
        )
    return operation, locked


def payment_confirm(
    *, payment: Payment, method_type: str, token_id: str, api_version: str | None = None
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

    operation, locked = _start(payment, Kind.CONFIRM, {}, api_version, check=spend_token)
    return _operate(operation, locked)


# --- after authorization ---------------------------------------------------------------------


def payment_complete_action(
    *, payment: Payment, details: dict, api_version: str | None = None
) -> Payment:
    """The payer finished (or abandoned) the challenge; `details` go to the connector."""
    operation, locked = _start(payment, Kind.PAYER_ACTION, {"details": details}, api_version)
    return _operate(operation, locked)


def payment_resolve(*, payment: Payment, api_version: str | None = None) -> Payment:
    """Settle a processing payment now (sandbox advance, a read after its time, beat)."""
    operation, locked = _start(payment, Kind.RESOLVE, {}, api_version)
    return _operate(operation, locked)


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
        payment.refresh_from_db()
        return payment


def payment_as_of_now(*, payment: Payment, api_version: str | None = None) -> Payment:
    """The payment as time has already made it, for a read: past its resolve time a processing
    payment is resolved, past its lifetime a pending, requires_action or authorized one is
    expired, before anyone sees it (so a read agrees with what an action would meet)."""
    if _lifetime_over(payment, timezone.now()):
        return payment_expire(payment=payment, api_version=api_version)
    try:
        return payment_resolve_if_due(payment=payment, api_version=api_version)
    except ServiceError as exc:
        # A read answers with what is stored: one payment the connector cannot settle now
        # must not fail a retrieve, nor every page of a list. It stays processing and due;
        # beat's resolve sweep asks again (nothing is left `started`: see _ask and _start).
        log.warning("read shows %s processing: %s (%s)", payment.pk, exc.message, exc.code)
        return payment


def payment_capture(
    *, payment: Payment, amount: int | None = None, api_version: str | None = None
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

    operation, locked = _start(payment, Kind.CAPTURE, {}, api_version, check=amount_to_capture)
    return _operate(operation, locked)


def payment_cancel(*, payment: Payment, api_version: str | None = None) -> Payment:
    """Void an authorization, or cancel a payment still waiting (pending, requires_action)."""
    payment = _expire_if_lapsed(payment, api_version)
    with transaction.atomic():
        locked = _lock_for(payment, Trigger.CANCEL)
        if locked.status != Status.AUTHORIZED:  # nothing authorized: no connector call
            _write_change(locked, Trigger.CANCEL, Status.CANCELED, api_version)
            answer_with_work(lambda: locked)
            return locked
        operation = operation_start(
            Kind.VOID, payment_id=locked.pk, request={}, api_version=api_version
        )
    return _operate(operation, locked)


def payment_expire(*, payment: Payment, api_version: str | None = None) -> Payment:
    """Expire a payment whose lifetime has elapsed; idempotent (beat may run twice)."""
    try:
        return _change(payment, Trigger.EXPIRE, Status.EXPIRED, api_version=api_version)
    except ProcessingFailed:
        # Moved on meanwhile (confirmed, captured, canceled), not due, or busy: nothing to do.
        payment.refresh_from_db()
        return payment
