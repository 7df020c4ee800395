"""Refund endpoints (spec "Endpoints > POST /v1/payments/:id/refunds, GET /v1/refunds/:id"):
thin views over refunds.services. There is no refunds list (config.urls answers 404)."""

from functools import partial

from rest_framework.response import Response

from api.validation import validated
from api.views import ServiceAPIView
from payments.views import PaymentMixin
from refunds import openapi, selectors, services
from refunds.serializers import RefundCreateInput, refund_to_dict


class PaymentRefundCreate(PaymentMixin, ServiceAPIView):
    @openapi.refund_create
    def post(self, request, payment_id):
        data = validated(RefundCreateInput, request.data)
        refund = partial(
            services.refund_create,
            payment=self.payment(request, payment_id),
            api_version=request.api_version,
            **data,
        )
        return self.operate(refund, created, recover=services.refund_operation_recover)


def created(refund) -> Response:
    return Response(refund_to_dict(refund), status=201)


class RefundDetail(ServiceAPIView):
    @openapi.refund_retrieve
    def get(self, request, refund_id):
        refund = selectors.refund_get(
            merchant=request.merchant, livemode=request.livemode, refund_id=refund_id
        )
        # A pending refund past its time is settled before anyone sees it.
        refund = services.refund_resolve_if_due(refund=refund, api_version=request.api_version)
        return Response(refund_to_dict(refund))
