"""The Stripe connector (docs/processors.md "The Stripe connector"): every Connector method on
Stripe's PaymentIntents and Refunds, through the official library.

Exactly one PaymentIntent per payment, whatever dies when: the PaymentIntent is created
unconfirmed and linked to our payment (processors.objects) before it is confirmed, so every
later ask (a retry, recovery, a webhook) finds it and acts on it rather than making another.
Every call carries our operation's id as Stripe's Idempotency-Key (with the step's name),
so a call repeated after a lost answer is one call at Stripe."""

import datetime

import stripe

from api.currencies import EXPONENT_0, EXPONENT_2
from api.errors import ApiFailure, ProcessingFailed, ValidationFailed
from payments.connectors import (
    Authorization,
    Connector,
    RefundAnswer,
    Refusal,
    Result,
)
from payments.declines import APPROVED_RESPONSE_CODE
from processors.accounts import account_problems, routed_account
from processors.models import ConnectorAccount
from processors.objects import Kind, link, linked, note
from processors.stripe.authentication import authentication_url
from processors.stripe.client import call, reason, stripe_client
from processors.stripe.declines import decline_of
from processors.stripe.outcome import card_facts, card_outcome, get_path

# Currencies whose minor units are Stripe's too (ISK and UGX are zero-decimal for us and
# two-decimal at Stripe; three-decimal ones need amounts ending in 0 there): docs/processors.md.
CURRENCIES = frozenset(EXPONENT_2) | (frozenset(EXPONENT_0) - {"isk", "ugx"})
# The methods proven against the emulator: the rest of the catalogue stays no_route, why for
# each in docs/processors.md "Alternative methods".
METHODS = frozenset({"card"})
ASK_AGAIN_AFTER = datetime.timedelta(minutes=10)  # a processing payment or pending refund

REFUND_STATUSES = {
    "succeeded": "succeeded",
    "pending": "pending",
    "requires_action": "pending",
    "failed": "failed",
    "canceled": "failed",
}


class StripeConnector(Connector):
    def supports(self, *, method, currency) -> bool:
        return method.name in METHODS and currency in CURRENCIES

    def route_problems(self, route) -> dict[str, str]:
        return account_problems(route, ConnectorAccount.Processor.STRIPE)

    # --- authorisation -----------------------------------------------------------------------

    def authorize(self, *, payment, token, key) -> Authorization:
        try:
            account, intent_id = self._intent_of(payment, token, key)
        except stripe.InvalidRequestError as exc:  # nothing was made: nothing to ask again
            raise ProcessingFailed(
                f"The processor refused the payment: {reason(exc)}.", code="payment_failed"
            ) from None
        client = stripe_client(account)
        intent = call(client.v1.payment_intents.retrieve, intent_id, params=EXPAND)
        if intent["status"] == "requires_confirmation":
            intent = _confirm(client, intent_id, key)
        return self._answer(payment, intent, client)

    def complete_action(self, *, payment, details, key) -> Authorization:
        """The payer came back (or Stripe told us by webhook): Stripe is asked, `details`
        say nothing Stripe does not know better."""
        answer = self.resolve(payment=payment, key=key)
        if answer.result == Result.REQUIRES_ACTION:
            raise ProcessingFailed(
                "The processor still awaits the payer's authentication.",
                code="payment_not_awaiting_action",
            )
        return answer

    def resolve(self, *, payment, key) -> Authorization:
        account, intent_id = _linked_intent(payment)
        client = stripe_client(account)
        intent = call(client.v1.payment_intents.retrieve, intent_id, params=EXPAND)
        answer = self._answer(payment, intent, client)
        if answer.result == Result.PROCESSING and payment.status == "processing":
            raise ProcessingFailed(
                "The processor has not settled this payment yet.", code="payment_not_advanceable"
            )
        return answer

    def _intent_of(self, payment, token, key) -> tuple[ConnectorAccount, str]:
        """The payment's PaymentIntent: the one already linked (asked again), or a new one,
        created unconfirmed and linked before anything else happens."""
        found = linked(Kind.PAYMENT, payment.id)
        if found is not None:
            return found.account, found.processor_id
        account = routed_account(
            merchant_id=payment.merchant_id,
            method_type=payment.method_type,
            currency=payment.currency,
        )
        params = {
            "amount": payment.amount,
            "currency": payment.currency,
            "capture_method": payment.capture_method,
            "payment_method": _payment_method_of(token, account),
            "metadata": {"svc_payment": payment.id, "svc_merchant": payment.merchant_id},
        }
        client = stripe_client(account)
        intent = call(
            client.v1.payment_intents.create,
            params=params,
            options={"idempotency_key": f"{key}-create"},
        )
        link(Kind.PAYMENT, payment.id, account, intent["id"])
        return account, intent["id"]

    def _answer(self, payment, intent, client) -> Authorization:
        """A PaymentIntent's state in our terms."""
        charge = intent.get("latest_charge")
        if charge is not None:
            note(Kind.PAYMENT, payment.id, charge=charge["id"])
        card = _card_of(client, intent, charge)
        facts = card_facts(card)
        match intent["status"]:
            case "succeeded" | "requires_capture":
                outcome = {**card_outcome(charge, card), "response_code": APPROVED_RESPONSE_CODE}
                return Authorization(Result.APPROVED, outcome=outcome, card=facts)
            case "requires_action":
                url = authentication_url(payment.id)
                outcome = {
                    "three_ds": {"status": "challenge_required", "eci": None, "version": None}
                }
                return Authorization(Result.REQUIRES_ACTION, outcome=outcome, redirect_url=url)
            case "processing":
                return Authorization(
                    Result.PROCESSING,
                    outcome=card_outcome(charge, card),
                    resolve_after=ASK_AGAIN_AFTER,
                )
            case "requires_payment_method":
                decline = decline_of(intent.get("last_payment_error"))
                outcome = {
                    **card_outcome(charge, card),
                    "response_code": decline.response_code,
                    "decline_code": decline.code,
                    "decline_is_soft": decline.soft,
                }
                return Authorization(Result.DECLINED, outcome=outcome, card=facts)
        return Authorization(Result.FAILED, outcome={"response_code": "96"})

    # --- after authorisation -----------------------------------------------------------------

    def capture(self, *, payment, amount, key) -> Refusal | None:
        """One capture, full or partial: Stripe releases the rest (the spec's rule)."""
        account, intent_id = _linked_intent(payment)
        client = stripe_client(account)
        try:
            call(
                client.v1.payment_intents.capture,
                intent_id,
                params={"amount_to_capture": amount},
                options={"idempotency_key": key},
            )
        except stripe.InvalidRequestError as exc:
            return _refusal_unless(client, intent_id, "succeeded", exc)
        return None

    def void(self, *, payment, key) -> Refusal | None:
        account, intent_id = _linked_intent(payment)
        client = stripe_client(account)
        try:
            call(client.v1.payment_intents.cancel, intent_id, options={"idempotency_key": key})
        except stripe.InvalidRequestError as exc:
            return _refusal_unless(client, intent_id, "canceled", exc)
        return None

    def refund(self, *, payment, refund, key) -> RefundAnswer:
        account, intent_id = _linked_intent(payment)
        client = stripe_client(account)
        made = _refund_made_for(client, intent_id, refund.id)
        if made is None:
            params = {
                "payment_intent": intent_id,
                "amount": refund.amount,
                "metadata": {"svc_refund": refund.id, "svc_payment": payment.id},
            }
            try:
                made = call(
                    client.v1.refunds.create, params=params, options={"idempotency_key": key}
                )
            except stripe.InvalidRequestError as exc:
                raise ProcessingFailed(
                    f"The processor refused the refund: {reason(exc)}.",
                    code="payment_not_refundable",
                ) from None
        link(Kind.REFUND, refund.id, account, made["id"])
        return _refund_answer(made)

    def resolve_refund(self, *, payment, refund, key) -> RefundAnswer:
        found = linked(Kind.REFUND, refund.id)
        if found is None:
            raise ApiFailure(f"No processor refund is linked to {refund.id}.")
        return _refund_answer(
            call(stripe_client(found.account).v1.refunds.retrieve, found.processor_id)
        )


EXPAND = {"expand": ["latest_charge"]}


def _confirm(client: stripe.StripeClient, intent_id: str, key: str):
    """Confirm; a card decline is an answer (the PaymentIntent, now with its error), and so
    is a refusal (confirmed meanwhile by a racing recovery, or not confirmable: the
    PaymentIntent says which)."""
    try:
        return call(
            client.v1.payment_intents.confirm,
            intent_id,
            params=EXPAND,
            options={"idempotency_key": f"{key}-confirm"},
        )
    except (stripe.CardError, stripe.InvalidRequestError):
        return call(client.v1.payment_intents.retrieve, intent_id, params=EXPAND)


def _card_of(client: stripe.StripeClient, intent, charge):
    """The card as the charge saw it (checks, 3-D Secure), or, where the charge does not say
    (an emulator's), as the payment method is stored."""
    card = get_path(charge, "payment_method_details", "card")
    if card is None and intent.get("payment_method"):
        method = call(client.v1.payment_methods.retrieve, _id(intent["payment_method"]))
        card = method.get("card") or method  # a card_ (legacy Card) is its own card
    return card


def _id(value) -> str:
    return value if isinstance(value, str) else value["id"]


def _refusal_unless(client, intent_id: str, done: str, exc) -> Refusal | None:
    """Stripe refused a capture or void: none if the PaymentIntent is already where the call
    was to take it (asked again after the first call's answer was lost), else the refusal."""
    if call(client.v1.payment_intents.retrieve, intent_id)["status"] == done:
        return None
    return Refusal(f"the processor refused it ({reason(exc)}).")


def _refund_made_for(client, intent_id: str, refund_id: str) -> dict | None:
    """The refund Stripe already made for ours (asked again after its answer was lost, before
    it was linked), found by its metadata among the PaymentIntent's refunds."""
    found = linked(Kind.REFUND, refund_id)
    if found is not None:
        return call(client.v1.refunds.retrieve, found.processor_id)
    made = call(client.v1.refunds.list, params={"payment_intent": intent_id, "limit": 100})
    return next((r for r in made["data"] if r["metadata"].get("svc_refund") == refund_id), None)


def _linked_intent(payment) -> tuple[ConnectorAccount, str]:
    found = linked(Kind.PAYMENT, payment.id)
    if found is None:
        raise ApiFailure(f"No PaymentIntent is linked to {payment.id}.")
    return found.account, found.processor_id


def _payment_method_of(token, account: ConnectorAccount) -> str:
    """The processor's payment method behind one of our live tokens, made at this account."""
    found = None if token is None else linked(Kind.TOKEN, token.id)
    if found is None or found.account_id != account.pk:
        raise ValidationFailed(
            "This token was not made for this payment's processor account.",
            code="token_invalid",
            param="payment_method.token",
        )
    return found.processor_id


def _refund_answer(refund) -> RefundAnswer:
    status = REFUND_STATUSES.get(refund["status"], "pending")
    failure = (refund.get("failure_reason") or "declined") if status == "failed" else None
    after = ASK_AGAIN_AFTER if status == "pending" else None
    return RefundAnswer(status, failure_code=failure, resolve_after=after)
