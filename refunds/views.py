"""Refund endpoints (spec "Endpoints > POST /v1/payments/:id/refunds, GET /v1/refunds/:id"):
thin views over refunds.services. There is no refunds list (config.urls answers 404)."""

from rest_framework.response import Response

from api.idempotency import Answer
from api.renderers import dumps
from api.validation import validated
from api.views import ServiceAPIView
from payments.views import PaymentMixin
from refunds import openapi, selectors, services
from refunds.models import Refund
from refunds.serializers import RefundCreateInput, refund_to_dict


def created(refund: Refund, request_id: str) -> Answer:
    return Answer(201, dumps(refund_to_dict(refund)))


class PaymentRefundCreate(PaymentMixin, ServiceAPIView):
    @openapi.refund_create
    def post(self, request, payment_id):
        data = validated(RefundCreateInput, request.data)
        refund = services.refund_create(
            payment=self.payment(request, payment_id),
            api_version=request.api_version,
            claim=self.claim(created),
            **data,
        )
        return self.respond(created, refund)


class RefundDetail(ServiceAPIView):
    @openapi.refund_retrieve
    def get(self, request, refund_id):
        refund = selectors.refund_get(
            merchant=request.merchant, livemode=request.livemode, refund_id=refund_id
        )
        # A pending refund past its time is settled before anyone sees it.
        refund = services.refund_as_of_now(refund=refund, api_version=request.api_version)
        return Response(refund_to_dict(refund))
