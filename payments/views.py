"""Payments endpoints (spec "Endpoints > Payments"): thin views over payments.services."""

from functools import partial

from rest_framework.response import Response

from api.errors import CardDeclined, ProcessingFailed
from api.validation import validated
from api.views import ServiceAPIView
from payments import openapi, selectors, services
from payments.models import Payment
from payments.operations import resumable
from payments.serializers import (
    CaptureInput,
    PaymentConfirmInput,
    PaymentCreateInput,
    parse_list_filters,
    payment_to_dict,
)
from payments.states import Status


def raise_for_outcome(payment: Payment) -> None:
    """The HTTP status carries the outcome: a committed decline is 402, a failure 422."""
    outcome = payment.outcome
    if payment.status == Status.DECLINED:
        softness = (
            "soft: a retry may succeed" if outcome["decline_is_soft"] else "hard: do not retry"
        )
        raise CardDeclined(
            f"The card was declined ({outcome['decline_code']}, {softness}). "
            f"Payment {payment.id} is declined.",
            decline_code=outcome["decline_code"],
        )
    if payment.status == Status.FAILED:
        raise ProcessingFailed(
            f"The payment could not be processed. Payment {payment.id} is failed.",
            code="payment_failed",
        )


class PaymentMixin:
    def payment(self, request, payment_id: str) -> Payment:
        return selectors.payment_get(
            merchant=request.merchant, livemode=request.livemode, payment_id=payment_id
        )

    def operate(self, work, respond, recover=services.payment_operation_recover):
        """`respond(work())`, its response stored with the work (ServiceAPIView.answered); the
        retry of a request that died mid-operation resumes the operation instead."""
        return self.answered(resumable(self._held_claim, work, recover), respond)


def created(payment: Payment) -> Response:
    raise_for_outcome(payment)
    return Response(payment_to_dict(payment), status=201)


def changed(payment: Payment) -> Response:
    raise_for_outcome(payment)
    return Response(payment_to_dict(payment))


def rendered(payment: Payment) -> Response:
    return Response(payment_to_dict(payment))


class PaymentListCreate(PaymentMixin, ServiceAPIView):
    @openapi.payment_create
    def post(self, request):
        data = validated(PaymentCreateInput, request.data)
        method = data.pop("payment_method")
        create = partial(
            services.payment_create,
            merchant=request.merchant,
            livemode=request.livemode,
            method_type=method["type"],
            token_id=method.get("token"),
            api_version=request.api_version,
            **data,
        )
        return self.operate(create, created)

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
        confirm = partial(
            services.payment_confirm,
            payment=self.payment(request, payment_id),
            method_type=method["type"],
            token_id=method["token"],
            api_version=request.api_version,
        )
        return self.operate(confirm, changed)


class PaymentCapture(PaymentMixin, ServiceAPIView):
    @openapi.payment_capture
    def post(self, request, payment_id):
        data = validated(CaptureInput, request.data)
        capture = partial(
            services.payment_capture,
            payment=self.payment(request, payment_id),
            amount=data.get("amount"),
            api_version=request.api_version,
        )
        return self.operate(capture, rendered)


class PaymentCancel(PaymentMixin, ServiceAPIView):
    @openapi.payment_cancel
    def post(self, request, payment_id):
        cancel = partial(
            services.payment_cancel,
            payment=self.payment(request, payment_id),
            api_version=request.api_version,
        )
        return self.operate(cancel, rendered)
