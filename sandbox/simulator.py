"""The simulator connector: test keys route here (settings.PAYMENT_CONNECTORS["test"]).

A payment's plan is its token's planned outcome (the card's plan in sandbox.cards), or for a
method paid without a token the plan of its flow (FLOW_PLANS), unless `_svc_test_outcome`
overrides it.
A plan is steps joined by `>`: the first answers the authorisation; the last is what the
challenge's Approve, or the resolution of an asynchronous payment, gives.
"""

import dataclasses
import datetime

from django.conf import settings
from django.utils import timezone

from api import errors
from api.renderers import format_timestamp
from payments.connectors import Authorization, Connector, RefundAnswer, Refusal, Result
from payments.declines import APPROVED_RESPONSE_CODE, DECLINES, SYSTEM_ERROR_RESPONSE_CODE
from payments.methods import DETAILS_FIELDS, Flow, get_method
from sandbox import overrides
from sandbox.cards import CARDS_BY_BIN_LAST4, TestCard
from sandbox.latency import simulated_wait
from sandbox.models import ChallengeSession
from sandbox.profiles import profile_apply

RESOLVE_AFTER = datetime.timedelta(seconds=30)  # spec "Limits": simulated async resolve time
THREE_DS_VERSION = "2.2.0"
# ECI of a fully authenticated 3-D Secure payment, by scheme.
AUTHENTICATED_ECI = {"visa": "05", "mastercard": "02"}
HARD_FRAUD_DECLINES = {"lost_card", "stolen_card", "fraud_suspected"}
# What a method paid without a token does, by its flow (docs/methods.md "Test mode").
FLOW_PLANS = {
    Flow.IMMEDIATE: "approved",
    Flow.REDIRECT: "requires_action>approved",
    Flow.ASYNCHRONOUS: "processing>approved",
}
METHOD_RISK_SCORE = 20  # no card checks to vary it with: one low score for every method
VOUCHER_LIFETIME = datetime.timedelta(days=3)
# The challenge page's buttons (decisions.md "Challenge page"): the step each gives (None:
# the plan's own last step) and, for a card, the 3-D Secure status it leaves.
CHALLENGE_RESULTS = {
    "approve": (None, "authenticated"),
    "decline": ("declined:sca_required", "failed"),
    "timeout": ("failed", "timed_out"),
}

_HTTP_ERRORS: dict[int, type[errors.ServiceError]] = {
    400: errors.ValidationFailed,
    401: errors.AuthenticationFailed,
    402: errors.CardDeclined,
    403: errors.AuthorizationFailed,
    404: errors.NotFound,
    409: errors.IdempotencyFailed,
    422: errors.ProcessingFailed,
    429: errors.RateLimited,
}


def simulated_http_error(status: int) -> errors.ServiceError:
    message = f"Simulated HTTP {status} (_svc_test_http_error): nothing was processed."
    if status >= 500:
        error = errors.ApiFailure(message, code="connector_http_error")
        error.status = status
        return error
    error_class = _HTTP_ERRORS[status]
    if error_class is errors.CardDeclined:
        return error_class(message, decline_code="generic_decline")
    if error_class is errors.RateLimited:
        return error_class(message, headers={"Retry-After": "1"})
    return error_class(message)


def card_of(payment) -> TestCard | None:
    """The test card behind a card-like payment; None for a method paid without a token."""
    if payment.card is None:
        return None
    return CARDS_BY_BIN_LAST4[(payment.card["bin"], payment.card["last4"])]


def plan_of(payment) -> list[str]:
    """The steps this payment walks through."""
    if payment.token is not None:
        planned = payment.token.planned_outcome.split(">")  # the tokenizer's plan for the card
    else:
        planned = FLOW_PLANS[get_method(payment.method_type).flow].split(">")
    override = overrides.outcome(payment.metadata)
    if override is None:
        return planned
    if override == "requires_action":
        return ["requires_action", planned[-1]]
    return [override]


def simulated_details(payment) -> dict:
    """`method.details` of a method paid without a token: the fields of its family
    (payments.methods.DETAILS_FIELDS), with values derived from the payment."""
    method = get_method(payment.method_type)
    suffix = payment.id.removeprefix("pay_")[-12:]
    now = timezone.now()
    values = {
        "payer_account": "payer@example.test",
        "bank": f"{method.name}_test_bank",
        "account_last4": "0001",
        "mandate": {
            "reference": f"MANDATE-{suffix}",
            "type": "online",
            "accepted_at": format_timestamp(now),
        },
        "voucher_number": "".join(str(ord(char) % 10) for char in suffix),
        "expires_at": format_timestamp(now + VOUCHER_LIFETIME),
        "installments": 4,
        "reference": f"SIM-{suffix}",
    }
    return {field: values[field] for field in DETAILS_FIELDS[method.family]}


def refund_plan(payment, refund) -> list[str]:
    """The steps a refund walks through: its override, else `succeeded` at once, or
    `pending` first for methods that settle asynchronously (bank debits, vouchers)."""
    plan = overrides.refund_outcome(refund.metadata)
    if plan is None:
        settles_later = get_method(payment.method_type).flow == Flow.ASYNCHRONOUS
        plan = "pending" if settles_later else "succeeded"
    return {"pending": "pending>succeeded"}.get(plan, plan).split(">")


def refund_answer(step: str) -> RefundAnswer:
    status, _, failure_code = step.partition(":")
    resolve_after = RESOLVE_AFTER if status == "pending" else None
    return RefundAnswer(status, failure_code=failure_code or None, resolve_after=resolve_after)


def risk_decision(score: int) -> str:
    return "accept" if score < 50 else "review" if score < 80 else "reject"


def answer(card: TestCard | None, step: str, *, authentication: dict | None = None):
    """The authorisation a step gives, with outcome data that varies with the card."""
    result, _, decline_code = step.partition(":")
    risk = card.risk_score if card else METHOD_RISK_SCORE
    outcome = {"risk_score": risk, "risk_decision": risk_decision(risk)}
    if result == Result.APPROVED:
        outcome["response_code"] = APPROVED_RESPONSE_CODE
    elif result == Result.DECLINED:
        decline = DECLINES[decline_code]
        outcome.update(
            response_code=decline.response_code,
            decline_code=decline.code,
            decline_is_soft=decline.soft,
        )
        if decline.code in HARD_FRAUD_DECLINES:
            outcome["risk_decision"] = "reject"
    elif result == Result.FAILED:
        outcome["response_code"] = SYSTEM_ERROR_RESPONSE_CODE
    if card is not None:
        outcome.update(card_checks(card, result, decline_code, authentication))
    return Authorization(result=Result(result), outcome=outcome)


def card_checks(card: TestCard, result: str, decline_code: str, authentication) -> dict:
    """What only a card answers: address and security-code checks, 3-D Secure, exemptions."""
    checks = {"avs_result": card.avs_result, "cvv_result": card.cvv_result}
    checks["three_ds"] = authentication
    if result == Result.APPROVED and authentication is None:
        if card.risk_score < 20:
            # Low risk: the acquirer claims an exemption instead of authenticating.
            checks["sca_exemption"] = "transaction_risk_analysis"
        else:
            checks["three_ds"] = authenticated(card, status="frictionless")
    elif result == Result.FAILED:
        checks.update(avs_result="U", cvv_result="U")
    elif result == Result.REQUIRES_ACTION:
        checks["three_ds"] = three_ds("challenge_required")
    if decline_code == "incorrect_cvc":
        checks["cvv_result"] = "N"
    return checks


def three_ds(status: str, eci: str | None = None) -> dict:
    return {"status": status, "eci": eci, "version": THREE_DS_VERSION}


def authenticated(card: TestCard, *, status: str) -> dict:
    return three_ds(status, AUTHENTICATED_ECI.get(card.brand, "05"))


def challenge_three_ds(card: TestCard, status: str) -> dict:
    """Authenticated on Approve (the scheme's ECI), failed on Decline, timed out on Timeout."""
    if status == "authenticated":
        return authenticated(card, status=status)
    return three_ds(status, "07" if status == "failed" else None)


class SimulatorConnector(Connector):
    def supports(self, *, method, currency) -> bool:
        return method.serves(currency)  # every catalogue method, in its currencies

    def authorize(self, *, payment, token, key) -> Authorization:
        status = overrides.http_error(payment.metadata)
        if status is not None:
            raise simulated_http_error(status)
        profile_apply(payment)  # the merchant's failure profile, unless an override wins
        delay = overrides.latency_ms(payment.metadata)
        if delay:  # the override's whole point: a slow issuer, for real (but capped)
            simulated_wait(merchant_id=payment.merchant_id, milliseconds=delay)
        card, step = card_of(payment), plan_of(payment)[0]
        auth = answer(card, step)
        extra = {}
        if card is None:
            extra["details"] = simulated_details(payment)
        if auth.result == Result.REQUIRES_ACTION:
            # Asked again (recovery), the same challenge: one session per payment.
            session, _ = ChallengeSession.objects.get_or_create(payment_id=payment.id)
            extra["redirect_url"] = f"{settings.PUBLIC_BASE_URL}/sandbox/challenge/{session.id}"
        if auth.result == Result.PROCESSING:
            extra["resolve_after"] = RESOLVE_AFTER
        return dataclasses.replace(auth, **extra)

    def complete_action(self, *, payment, details, key) -> Authorization:
        """The challenge page's buttons: the same page for a card's 3-D Secure challenge and
        for the redirect of a method paid without a token (which has no 3-D Secure)."""
        card = card_of(payment)
        step, status = CHALLENGE_RESULTS[details["challenge_result"]]
        authentication = None if card is None else challenge_three_ds(card, status)
        return answer(card, step or plan_of(payment)[-1], authentication=authentication)

    def resolve(self, *, payment, key) -> Authorization:
        return answer(card_of(payment), plan_of(payment)[-1])

    def capture(self, *, payment, amount, key) -> Refusal | None:
        if overrides.flag(payment.metadata, overrides.REFUSE_CAPTURE):
            return Refusal("the processor refused the capture (_svc_test_refuse_capture).")
        return None

    def void(self, *, payment, key) -> Refusal | None:
        if overrides.flag(payment.metadata, overrides.REFUSE_VOID):
            return Refusal("the processor refused the void (_svc_test_refuse_void).")
        return None

    def refund(self, *, payment, refund, key) -> RefundAnswer:
        return refund_answer(refund_plan(payment, refund)[0])

    def resolve_refund(self, *, payment, refund, key) -> RefundAnswer:
        return refund_answer(refund_plan(payment, refund)[-1])
