"""Payments endpoints (spec "Endpoints > Payments"): thin views over payments.services."""

from rest_framework.response import Response

from api.errors import CardDeclined, ProcessingFailed, ServiceError
from api.idempotency import Answer, error_answer
from api.renderers import dumps
from api.validation import validated
from api.views import ServiceAPIView
from payments import openapi, selectors, services
from payments.models import Payment
from payments.serializers import (
    CaptureInput,
    PaymentConfirmInput,
    PaymentCreateInput,
    parse_list_filters,
    payment_to_dict,
)
from payments.states import Status


def outcome_error(payment: Payment) -> ServiceError | None:
    """The HTTP status carries the outcome: a committed decline is 402, a failure 422."""
    outcome = payment.outcome
    if payment.status == Status.DECLINED:
        softness = (
            "soft: a retry may succeed" if outcome["decline_is_soft"] else "hard: do not retry"
        )
        return CardDeclined(
            f"The card was declined ({outcome['decline_code']}, {softness}). "
            f"Payment {payment.id} is declined.",
            decline_code=outcome["decline_code"],
            payment=payment.id,
        )
    if payment.status == Status.FAILED:
        return ProcessingFailed(
            f"The payment could not be processed. Payment {payment.id} is failed.",
            code="payment_failed",
            payment=payment.id,
        )
    return None


def _authorized(payment: Payment, request_id: str, status: int) -> Answer:
    error = outcome_error(payment)
    if error is not None:
        return error_answer(error, request_id)
    return Answer(status, dumps(payment_to_dict(payment)))


def created(payment: Payment, request_id: str) -> Answer:
    """A create's answer: 201, or the decline (402) or failure (422) it committed."""
    return _authorized(payment, request_id, 201)


def changed(payment: Payment, request_id: str) -> Answer:
    """A confirm's answer: 200, or the decline or failure it committed."""
    return _authorized(payment, request_id, 200)


def rendered(payment: Payment, request_id: str) -> Answer:
    return Answer(200, dumps(payment_to_dict(payment)))


class PaymentMixin:
    def payment(self, request, payment_id: str) -> Payment:
        return selectors.payment_get(
            merchant=request.merchant, livemode=request.livemode, payment_id=payment_id
        )


class PaymentListCreate(PaymentMixin, ServiceAPIView):
    defers_its_claim = True  # written by step 1 (services.claims_in_step_one)

    @openapi.payment_create
    def post(self, request):
        data = validated(PaymentCreateInput, request.data)
        method = data.pop("payment_method")
        token_id = method.get("token")
        payment = self.run_claimed(
            created,
            lambda claim: services.payment_create(
                merchant=request.merchant,
                livemode=request.livemode,
                method_type=method["type"],
                token_id=token_id,
                api_version=request.api_version,
                claim=claim,
                request_id=request.request_id,
                **data,
            ),
            deferred=services.claims_in_step_one(token_id),
        )
        return self.respond(created, payment)

    @openapi.payment_list
    def get(self, request):
        payments = selectors.payment_list(
            merchant=request.merchant,
            livemode=request.livemode,
            filters=parse_list_filters(request.query_params),
        )

        def render(payment):
            # Time acts before anyone sees a payment: resolve time and lifetimes.
            return payment_to_dict(
                services.payment_as_of_now(payment=payment, api_version=request.api_version)
            )

        return Response(self.paginated(payments, id_prefix="pay", serialize=render))


class PaymentDetail(PaymentMixin, ServiceAPIView):
    @openapi.payment_retrieve
    def get(self, request, payment_id):
        payment = services.payment_as_of_now(
            payment=self.payment(request, payment_id), api_version=request.api_version
        )
        return Response(payment_to_dict(payment))


class PaymentConfirm(PaymentMixin, ServiceAPIView):
    @openapi.payment_confirm
    def post(self, request, payment_id):
        method = validated(PaymentConfirmInput, request.data)["payment_method"]
        payment = services.payment_confirm(
            payment=self.payment(request, payment_id),
            method_type=method["type"],
            token_id=method["token"],
            api_version=request.api_version,
            claim=self.claim(changed),
        )
        return self.respond(changed, payment)


class PaymentCapture(PaymentMixin, ServiceAPIView):
    @openapi.payment_capture
    def post(self, request, payment_id):
        data = validated(CaptureInput, request.data)
        payment = services.payment_capture(
            payment=self.payment(request, payment_id),
            amount=data.get("amount"),
            api_version=request.api_version,
            claim=self.claim(rendered),
        )
        return self.respond(rendered, payment)


class PaymentCancel(PaymentMixin, ServiceAPIView):
    @openapi.payment_cancel
    def post(self, request, payment_id):
        payment = services.payment_cancel(
            payment=self.payment(request, payment_id),
            api_version=request.api_version,
            claim=self.claim(rendered),
        )
        return self.respond(rendered, payment)
