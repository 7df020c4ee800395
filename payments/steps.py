"""What a payment's connector operation does at each step the runner (payments.runner) runs:
which connector call it makes, and how its answer is applied (docs/payments.md "Operation
runner")."""

from dataclasses import dataclass

from django.utils import timezone

from accounts.models import Merchant
from api.errors import ProcessingFailed
from api.idempotency import Claim, answer_storing, answer_written
from events.services import events_written, fan_out_guard, fan_out_read, new_events
from infra.rows import insert_instances_if
from payments import metrics
from payments.connectors import Authorization, Connector, Refusal
from payments.methods import get_method
from payments.models import Operation, Payment, Token
from payments.operations import operation_apply, operation_applying
from payments.runner import run
from payments.serializers import payment_to_dict
from payments.states import Status, Trigger, check_transition
from payments.tokens import card_of, token_release
from payments.writes import (
    emit,
    enter,
    event_values,
    payment_lock,
    save_and_emit,
    status_event,
    take_authorization,
    take_capture,
)

Kind = Operation.Kind
TRIGGERS = {
    Kind.CREATE: Trigger.CREATE,
    Kind.CONFIRM: Trigger.CONFIRM,
    Kind.PAYER_ACTION: Trigger.PAYER_ACTION,
    Kind.RESOLVE: Trigger.RESOLVE,
    Kind.CAPTURE: Trigger.CAPTURE,
    Kind.VOID: Trigger.CANCEL,
}
# The values a create's operation keeps of its payment: enough to insert it with the answer
# (the card is its token's: _subject reads it again, so step 1 can record the operation in
# the statement that takes the token, before the token's row is known).
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
    "customer",
    "customer_details",
    "return_url",
    "statement_descriptor",
    "metadata",
    "token_id",
)


@dataclass
class PaymentWork:
    """A payment operation for the runner: `payment` as the connector call sees it (a
    create's not stored yet, a confirm's with its token)."""

    payment: Payment

    def ask(self, connector: Connector, operation: Operation):
        payment, key, request = self.payment, operation.pk, operation.request
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

    def abandoned(self, operation: Operation) -> None:
        """A create's or confirm's token is given back: nothing was processed."""
        if self.payment.token is not None and operation.kind in (Kind.CREATE, Kind.CONFIRM):
            token_release(self.payment.token)

    def apply_alone(self, operation: Operation, answer, claim: Claim | None) -> Payment | None:
        """A create whose events fan out to nothing, applied in one statement of its own
        (`_apply_create`'s `alone`); None for every other operation, and for a create it
        could not apply so."""
        if operation.kind != Kind.CREATE:
            return None
        return _apply_create(operation, self.payment, answer, claim, alone=True)

    def apply(
        self, operation: Operation, answer, claim: Claim | None
    ) -> Payment | ProcessingFailed:
        """The answer and its events under the payment's lock, the operation marked applied.
        A second writer (recovery racing the original request) finds the operation applied
        and gets the payment as it stands. -> the payment, or the processor's refusal of a
        capture or void (committed with its event; nothing moved)."""
        if operation.kind == Kind.CREATE:
            return _apply_create(operation, self.payment, answer, claim)
        locked = payment_lock(self.payment)
        if not operation_apply(operation):
            return locked
        if isinstance(answer, Refusal):
            return _refused(operation, locked, answer)
        before, now = payment_to_dict(locked), timezone.now()
        match operation.kind:
            case Kind.CAPTURE:
                take_capture(locked, operation.request["amount"], now)
                enter(locked, Status.CAPTURED, now)
            case Kind.VOID:
                locked.canceled_at = now
                enter(locked, Status.CANCELED, now)
            case Kind.CONFIRM:
                locked.token, locked.card = self.payment.token, operation.request["card"]
                take_authorization(locked, answer, now)
            case _:
                take_authorization(locked, answer, now)
        save_and_emit(locked, TRIGGERS[operation.kind], before, operation.api_version)
        return locked


def _refused(operation: Operation, locked: Payment, refusal: Refusal) -> ProcessingFailed:
    """422 `capture_failed` / `void_failed`: the payment stays authorized; a refused capture
    is reported as an event too (spec)."""
    action = operation.kind  # capture or void
    if action == Kind.CAPTURE:
        before = payment_to_dict(locked)
        emit(locked, ["payment.capture_failed"], before, operation.api_version)
    return ProcessingFailed(
        f"The {action} of {locked.id} was refused: {refusal.reason} The payment stays authorized.",
        code=f"{action}_failed",
    )


def _apply_create(
    operation: Operation,
    payment: Payment,
    answer: Authorization,
    claim: Claim | None,
    *,
    alone: bool = False,
) -> Payment | None:
    """The payments room inserts its payment with its events (payment.created, then the
    event of the status it landed in) and stores the request's answer, in the statement that
    marks the operation applied, only if it does; else the payment another writer inserted
    (its answer stored by the runner).

    `alone`: the statement is its own transaction (autocommit: no BEGIN, no COMMIT, two
    round trips fewer), which it can be only when the events' fan-out writes nothing (their
    merchant has no webhook endpoint in that mode): the statement applies the operation
    only if that still holds (events.services.fan_out_guard). None when it does not hold or
    did not apply: nothing was written, the caller applies it in a transaction. A claim a
    retry took over meanwhile (the answer's UPDATE changed nothing) still gets 409, but the
    payment stays written: the retry, resuming the operation, finds it applied and answers
    that payment, as it answers one the original request's transaction committed."""
    target = take_authorization(payment, answer, timezone.now())
    check_transition(None, Trigger.CREATE, target)
    types = ["payment.created", status_event(payment)]
    values = event_values(payment, types, None, operation.api_version)
    events = new_events(**values, one_statement=alone)
    guard = fan_out_guard(events) if alone else None
    if alone and guard is None:
        return None
    applying = operation_applying(operation, guard)
    storing = answer_storing(claim, payment)
    then = [] if storing is None else [storing[1]]
    fan_out = fan_out_read(events)
    reads = [] if fan_out is None else [fan_out]
    fenced = insert_instances_if(applying, [payment, *events], then=then, reads=reads)
    if not fenced.changed:
        if alone:
            return None
        return Payment.objects.select_related("merchant").get(pk=payment.pk)
    if storing is not None:
        answer_written(claim, storing[0], fenced.then[0])
    events_written(events, read=fenced.read[0] if reads else None)
    metrics.payment_entered(payment, Trigger.CREATE)
    return payment


def _subject(operation: Operation) -> Payment:
    """The payment as the operation's connector call saw it, rebuilt from the records alone
    (for recovery): a create's payment from its operation, a confirm's with its token."""
    request = operation.request
    if operation.kind == Kind.CREATE:
        payment = Payment(**{field: request[field] for field in CREATE_FIELDS})
        payment.merchant = Merchant.objects.get(pk=payment.merchant_id)
        payment.created = operation.created  # its request's moment, not the recovery's
        if payment.token_id is not None:
            payment.card = card_of(payment.token, get_method(payment.method_type))
    else:
        payment = Payment.objects.select_related("merchant", "token").get(pk=operation.payment_id)
    if operation.kind == Kind.CONFIRM:
        payment.token = Token.objects.get(pk=request["token_id"])
        payment.card = request["card"]
    return payment


def payment_operation_recover(operation: Operation, claim: Claim | None = None) -> Payment:
    """Finish an operation left `started` (its process died after asking the connector, or
    before): ask again with the same key, which the connector answers as the first time,
    and apply the answer (under `claim`: the retry of the request that started it). A
    ServiceError leaves it for the next try (or abandons it, if the connector says nothing
    was processed)."""
    return run(operation, PaymentWork(_subject(operation)), claim)
