"""The simulator connector: test keys route here (settings.PAYMENT_CONNECTORS["test"]).

A payment's plan is its token's planned outcome (the card's plan in sandbox.cards), unless
`_svc_test_outcome` overrides it.
A plan is steps joined by `>`: the first answers the authorisation; the last is what the
challenge's Approve, or the resolution of an asynchronous payment, gives.
"""

import datetime
import time

from django.conf import settings

from api import errors
from payments.connectors import Authorisation, Connector, RefundAnswer, Refusal, Result
from payments.declines import APPROVED_RESPONSE_CODE, DECLINES, SYSTEM_ERROR_RESPONSE_CODE
from payments.methods import Flow, get_method
from sandbox import overrides
from sandbox.cards import CARDS_BY_BIN_LAST4, TestCard
from sandbox.models import ChallengeSession

RESOLVE_AFTER = datetime.timedelta(seconds=30)  # spec "Limits": simulated async resolve time
THREE_DS_VERSION = "2.2.0"
# ECI of a fully authenticated 3-D Secure payment, by scheme.
AUTHENTICATED_ECI = {"visa": "05", "mastercard": "02"}
HARD_FRAUD_DECLINES = {"lost_card", "stolen_card", "fraud_suspected"}

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


def card_of(payment) -> TestCard:
    return CARDS_BY_BIN_LAST4[(payment.card["bin"], payment.card["last4"])]


def plan_of(payment) -> list[str]:
    """The steps this payment walks through."""
    planned = payment.token.planned_outcome.split(">")  # what the tokenizer planned for the card
    override = overrides.outcome(payment.metadata)
    if override is None:
        return planned
    if override == "requires_action":
        return ["requires_action", planned[-1]]
    return [override]


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


def answer(card: TestCard, step: str, *, authentication: dict | None = None) -> Authorisation:
    """The authorisation a step gives, with outcome data that varies with the card."""
    result, _, decline_code = step.partition(":")
    outcome = {
        "avs_result": card.avs_result,
        "cvv_result": card.cvv_result,
        "risk_score": card.risk_score,
        "risk_decision": risk_decision(card.risk_score),
        "three_ds": authentication,
    }
    if result == Result.APPROVED:
        outcome["response_code"] = APPROVED_RESPONSE_CODE
        if authentication is None and card.risk_score < 20:
            # Low risk: the acquirer claims an exemption instead of authenticating.
            outcome["sca_exemption"] = "transaction_risk_analysis"
        elif authentication is None:
            outcome["three_ds"] = authenticated(card, status="frictionless")
    elif result == Result.DECLINED:
        decline = DECLINES[decline_code]
        outcome.update(
            response_code=decline.response_code,
            decline_code=decline.code,
            decline_is_soft=decline.soft,
        )
        if decline.code == "incorrect_cvc":
            outcome["cvv_result"] = "N"
        if decline.code in HARD_FRAUD_DECLINES:
            outcome["risk_decision"] = "reject"
    elif result == Result.FAILED:
        outcome.update(response_code=SYSTEM_ERROR_RESPONSE_CODE, avs_result="U", cvv_result="U")
    elif result == Result.REQUIRES_ACTION:
        outcome["three_ds"] = three_ds("challenge_required")
    return Authorisation(result=Result(result), outcome=outcome)


def three_ds(status: str, eci: str | None = None) -> dict:
    return {"status": status, "eci": eci, "version": THREE_DS_VERSION}


def authenticated(card: TestCard, *, status: str) -> dict:
    return three_ds(status, AUTHENTICATED_ECI.get(card.brand, "05"))


class SimulatorConnector(Connector):
    def supports(self, *, method, currency) -> bool:
        return method.card_like  # the simulator answers for every card-like method

    def authorise(self, *, payment, token) -> Authorisation:
        status = overrides.http_error(payment.metadata)
        if status is not None:
            raise simulated_http_error(status)
        delay = overrides.latency_ms(payment.metadata)
        if delay:
            time.sleep(delay / 1000)  # the override's whole point: a slow issuer, for real
        card, step = card_of(payment), plan_of(payment)[0]
        auth = answer(card, step)
        if auth.result == Result.REQUIRES_ACTION:
            session = ChallengeSession.objects.create(payment_id=payment.id)
            url = f"{settings.PUBLIC_BASE_URL}/sandbox/challenge/{session.id}"
            return Authorisation(result=auth.result, outcome=auth.outcome, redirect_url=url)
        if auth.result == Result.PROCESSING:
            return Authorisation(
                result=auth.result, outcome=auth.outcome, resolve_after=RESOLVE_AFTER
            )
        return auth

    def complete_action(self, *, payment, details) -> Authorisation:
        """The challenge page's buttons (decisions.md "Challenge page")."""
        card = card_of(payment)
        action = details["challenge_result"]
        if action == "approve":
            return answer(
                card,
                plan_of(payment)[-1],
                authentication=authenticated(card, status="authenticated"),
            )
        if action == "decline":
            return answer(card, "declined:sca_required", authentication=three_ds("failed", "07"))
        return answer(card, "failed", authentication=three_ds("timed_out"))

    def resolve(self, *, payment) -> Authorisation:
        return answer(card_of(payment), plan_of(payment)[-1])

    def capture(self, *, payment, amount) -> Refusal | None:
        if overrides.flag(payment.metadata, overrides.REFUSE_CAPTURE):
            return Refusal("the processor refused the capture (_svc_test_refuse_capture).")
        return None

    def void(self, *, payment) -> Refusal | None:
        if overrides.flag(payment.metadata, overrides.REFUSE_VOID):
            return Refusal("the processor refused the void (_svc_test_refuse_void).")
        return None

    def refund(self, *, payment, refund) -> RefundAnswer:
        return refund_answer(refund_plan(payment, refund)[0])

    def resolve_refund(self, *, payment, refund) -> RefundAnswer:
        return refund_answer(refund_plan(payment, refund)[-1])
