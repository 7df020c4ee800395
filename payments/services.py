"""Writes for payments. Every status change goes through `_change`: one transaction that locks
the row, checks the transition against payments.states, writes the new state and emits its
event (spec "States and transitions": a status a client can read has produced its event).

Connector calls that authorise never hold a payment's row lock: a create claims its token and
authorises in the transaction that then writes the new payment (only the token's row is
locked meanwhile, and no one else may use it), a confirm authorises before locking the
payment; capture, void, payer action and resolution ask the connector under the row lock, so
two of them can never both reach the processor for one payment (docs/payments.md
"Concurrency").
"""

import datetime
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Merchant
from api.errors import ProcessingFailed, ServiceError, ValidationFailed
from events.services import emit_all
from payments.connectors import Authorisation, Connector, Result, connector_of, route
from payments.fees import fees_for, parse_schedule
from payments.methods import Method, get_method
from payments.models import Payment, empty_outcome
from payments.serializers import payment_to_dict
from payments.states import LIFETIMES, STATUS_EVENTS, Status, Trigger, check_transition
from payments.tokens import card_of, token_release, token_take

AUTOMATIC = Payment.CaptureMethod.AUTOMATIC


def _authorise(
    *, connector: Connector, payment: Payment, method: Method, token_id: str | None
) -> Authorisation:
    """Take the token (if the method is paid with one) and ask the connector. If the
    connector could not be asked (it raised), nothing was processed: the token is released
    and the error goes to the client."""
    if not method.card_like:
        return connector.authorise(payment=payment, token=None)
    token = token_take(
        merchant=payment.merchant, livemode=payment.livemode, token_id=token_id, method=method
    )
    payment.token = token
    payment.card = card_of(token, method)
    try:
        return connector.authorise(payment=payment, token=token)
    except ServiceError:
        token_release(token)
        raise


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


def _take_authorisation(payment: Payment, auth: Authorisation, now: datetime.datetime) -> Status:
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
):
    """The events of `types` about the payment as it is now; `new`: the payment is not stored
    yet and is inserted with them."""
    after = payment_to_dict(payment)
    previous = {}
    if before is not None:
        keys = after.keys() | before.keys()
        previous = {key: before.get(key) for key in keys if before.get(key) != after.get(key)}
    emit_all(
        merchant=payment.merchant,
        livemode=payment.livemode,
        types=types,
        obj=after,
        previous_attributes=previous,
        api_version=api_version,
        new_resource=payment if new else None,
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


def _expire(locked: Payment, now: datetime.datetime) -> Status:
    if not _lifetime_over(locked, now):
        raise ProcessingFailed("Not due yet.", code="payment_not_expirable")
    _enter(locked, Status.EXPIRED, now)
    return Status.EXPIRED


def _change(
    payment: Payment,
    trigger: Trigger,
    apply: Callable[[Payment, datetime.datetime], Status],
    *,
    api_version: str | None,
    refusal_event: str | None = None,
) -> Payment:
    """The one way a status changes: lock, check, write, emit, in one transaction.

    `apply(locked, now)` runs under the lock, writes the new state onto the row and returns
    its status; it may raise to refuse (nothing is written). Returning the status unchanged
    records a refusal the spec reports as an event (`refusal_event`) rather than a rollback.

    A payment whose lifetime is over is expired first and `trigger` refused as for any expired
    payment (spec "Payment statuses": pending and requires_action expire after 1 hour,
    authorized after 7 days): a capture must never take an authorisation that lapsed a moment
    before the sweep came, nor a cancel void one. The expiry is committed, then refused.
    """
    with transaction.atomic():
        locked = payment_lock(payment)
        lapsed = trigger != Trigger.EXPIRE and _lifetime_over(locked, timezone.now())
        if lapsed:
            _write(locked, Trigger.EXPIRE, _expire, api_version=api_version)
        else:
            _write(locked, trigger, apply, api_version=api_version, refusal_event=refusal_event)
    if lapsed:
        check_transition(locked.status, trigger)  # raises the trigger's refusal for `expired`
    return locked


def _write(locked: Payment, trigger: Trigger, apply, *, api_version, refusal_event=None) -> None:
    check_transition(locked.status, trigger)
    before = payment_to_dict(locked)
    target = apply(locked, timezone.now())
    if target == before["status"] and refusal_event:
        _emit(locked, [refusal_event], before, api_version)
        return
    check_transition(before["status"], trigger, target)
    locked.save()
    _emit(locked, [_status_event(locked)], before, api_version)


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
    """Create a payment; with a token, or for a method paid without one, it is authorised (and
    maybe captured) in the same call.

    A decline or a processing failure is a payment too: it is committed with its events and
    returned; the caller reports it by HTTP status (spec "POST /v1/payments").
    """
    method = get_method(method_type)
    if token_id is not None and not method.card_like:
        raise ValidationFailed(
            f"{method.name} is paid without a token.", param="payment_method.token"
        )
    _check_account(merchant, amount)
    connector = route(merchant_id=merchant.pk, livemode=livemode, method=method, currency=currency)
    payment = Payment(
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
    # One transaction from the token's claim to the events: a connector that raises rolls the
    # claim back with everything else, and a payment costs one commit, not two.
    with transaction.atomic():
        auth = None
        if token_id is not None or not method.card_like:  # alternative methods never wait
            auth = _authorise(
                connector=connector, payment=payment, method=method, token_id=token_id
            )
        now = timezone.now()
        payment.created = now
        if auth is None:
            target = Status.PENDING
            _enter(payment, target, now)
        else:
            target = _take_authorisation(payment, auth, now)
        check_transition(None, Trigger.CREATE, target)
        # payment.created for every new payment, then the event of the status it landed in.
        status_event = _status_event(payment)
        types = ["payment.created", status_event] if status_event else ["payment.created"]
        _emit(payment, types, None, api_version, new=True)
    return payment


def payment_confirm(
    *, payment: Payment, method_type: str, token_id: str, api_version: str | None = None
) -> Payment:
    """Attach a token to a pending payment and authorise it (the two-step flow)."""
    if _lifetime_over(payment, timezone.now()):
        # Then refused below, before the token is spent.
        payment = payment_expire(payment=payment, api_version=api_version)
    check_transition(payment.status, Trigger.CONFIRM)  # before the token is spent
    method = get_method(method_type)
    if method.name != payment.method_type:
        raise ValidationFailed(
            f"This payment was created for {payment.method_type}, not {method.name}.",
            param="payment_method.type",
        )
    connector = connector_of(payment)
    auth = _authorise(connector=connector, payment=payment, method=method, token_id=token_id)

    def apply(locked: Payment, now: datetime.datetime) -> Status:
        locked.token, locked.card = payment.token, payment.card
        return _take_authorisation(locked, auth, now)

    return _change(payment, Trigger.CONFIRM, apply, api_version=api_version)


# --- after authorisation ---------------------------------------------------------------------


def payment_complete_action(
    *, payment: Payment, details: dict, api_version: str | None = None
) -> Payment:
    """The payer finished (or abandoned) the challenge; `details` go to the connector."""

    def apply(locked: Payment, now: datetime.datetime) -> Status:
        auth = connector_of(locked).complete_action(payment=locked, details=details)
        return _take_authorisation(locked, auth, now)

    return _change(payment, Trigger.PAYER_ACTION, apply, api_version=api_version)


def payment_resolve(*, payment: Payment, api_version: str | None = None) -> Payment:
    """Settle a processing payment now (sandbox advance, a read after its time, beat)."""

    def apply(locked: Payment, now: datetime.datetime) -> Status:
        return _take_authorisation(locked, connector_of(locked).resolve(payment=locked), now)

    return _change(payment, Trigger.RESOLVE, apply, api_version=api_version)


def payment_resolve_if_due(*, payment: Payment, api_version: str | None = None) -> Payment:
    """Resolve a processing payment whose time has come; anything else is returned as is.

    Idempotent: a payment resolved meanwhile (by advance, a read or beat) is left alone.
    """
    if payment.status != Status.PROCESSING or not payment.due_at or payment.due_at > timezone.now():
        return payment
    try:
        return payment_resolve(payment=payment, api_version=api_version)
    except ProcessingFailed as exc:
        if exc.code != "payment_not_advanceable":
            raise
        payment.refresh_from_db()
        return payment


def payment_as_of_now(*, payment: Payment, api_version: str | None = None) -> Payment:
    """The payment as time has already made it, for a read: past its resolve time a processing
    payment is resolved, past its lifetime a pending, requires_action or authorized one is
    expired, before anyone sees it (so a read agrees with what an action would meet)."""
    if _lifetime_over(payment, timezone.now()):
        return payment_expire(payment=payment, api_version=api_version)
    return payment_resolve_if_due(payment=payment, api_version=api_version)


def payment_capture(
    *, payment: Payment, amount: int | None = None, api_version: str | None = None
) -> Payment:
    """Capture all of an authorisation, or once a part of it (the rest is released).

    A refused capture leaves the payment authorized, emits `payment.capture_failed` and is
    422 `capture_failed`.
    """
    refused = []

    def apply(locked: Payment, now: datetime.datetime) -> Status:
        to_capture = locked.amount if amount is None else amount
        if to_capture > locked.amount:
            raise ValidationFailed(
                f"amount {to_capture} is above the authorised amount {locked.amount}.",
                param="amount",
            )
        refusal = connector_of(locked).capture(payment=locked, amount=to_capture)
        if refusal is not None:
            refused.append(refusal)
            return Status.AUTHORIZED
        _take_capture(locked, to_capture, now)
        _enter(locked, Status.CAPTURED, now)
        return Status.CAPTURED

    payment = _change(
        payment,
        Trigger.CAPTURE,
        apply,
        api_version=api_version,
        refusal_event="payment.capture_failed",
    )
    if refused:
        raise ProcessingFailed(
            f"The capture of {payment.id} was refused: {refused[0].reason} "
            "The payment stays authorized.",
            code="capture_failed",
        )
    return payment


def payment_cancel(*, payment: Payment, api_version: str | None = None) -> Payment:
    """Void an authorisation, or cancel a payment still waiting (pending, requires_action)."""

    def apply(locked: Payment, now: datetime.datetime) -> Status:
        if locked.status == Status.AUTHORIZED:
            refusal = connector_of(locked).void(payment=locked)
            if refusal is not None:
                raise ProcessingFailed(
                    f"The void of {locked.id} was refused: {refusal.reason} "
                    f"The payment stays {locked.status}.",
                    code="void_failed",
                )
        locked.canceled_at = now
        _enter(locked, Status.CANCELED, now)
        return Status.CANCELED

    return _change(payment, Trigger.CANCEL, apply, api_version=api_version)


def payment_expire(*, payment: Payment, api_version: str | None = None) -> Payment:
    """Expire a payment whose lifetime has elapsed; idempotent (beat may run twice)."""
    try:
        return _change(payment, Trigger.EXPIRE, _expire, api_version=api_version)
    except ProcessingFailed:
        # Moved on meanwhile (confirmed, captured, canceled) or not due: nothing to do.
        payment.refresh_from_db()
        return payment
