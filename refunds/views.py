"""Refund endpoints (spec "Endpoints > POST /v1/payments/:id/refunds, GET /v1/refunds/:id"):
thin views over refunds.services. There is no refunds list (config.urls answers 404)."""

from rest_framework.response import Response

from api.idempotency import Answer
from api.pagination import list_envelope, paginate_fixed
from api.renderers import dumps
from api.validation import validated
from api.views import ServiceAPIView
from payments.selectors import payment_get
from refunds import openapi, selectors, services
from refunds.models import Refund
from refunds.serializers import RefundCreateInput, refund_to_dict
from refunds.timeline import payment_timeline


def payment_of(request, payment_id: str):
    """The payment the path names, the caller's own in its mode (a 404 otherwise), read
    through the payments room's selector, as every room reads another's rows."""
    return payment_get(merchant=request.merchant, livemode=request.livemode, payment_id=payment_id)


def created(refund: Refund, request_id: str) -> Answer:
    return Answer(201, dumps(refund_to_dict(refund)))


class PaymentRefundCreate(ServiceAPIView):
    @openapi.refund_create
    def post(self, request, payment_id):
        data = validated(RefundCreateInput, request.data)
        refund = services.refund_create(
            payment=payment_of(request, payment_id),
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


class PaymentTimeline(ServiceAPIView):
    """One payment, one story (docs/sandbox.md "Timeline"), oldest first, a page at a time."""

    @openapi.payment_timeline
    def get(self, request, payment_id):
        items = payment_timeline(payment_of(request, payment_id))
        page, has_more, next_cursor = paginate_fixed(
            items, request.query_params, key=lambda item: item.key
        )
        return Response(list_envelope([item.as_dict() for item in page], has_more, next_cursor))
