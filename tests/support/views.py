"""Test-only views exercising the shared API machinery before real resources use it."""

import time

from rest_framework import serializers
from rest_framework.response import Response

from accounts.models import ApiKey, Merchant
from api.errors import ApiFailure, CardDeclined, ProcessingFailed, RateLimited, not_found
from api.fields import AmountField, CurrencyField, MetadataField
from api.ids import new_id
from api.views import ServiceAPIView


def key_to_dict(api_key: ApiKey) -> dict:
    return {
        "id": api_key.id,
        "object": "api_key",
        "livemode": api_key.livemode,
        "created": api_key.created,
    }


class KeyList(ServiceAPIView):
    def get(self, request):
        keys = ApiKey.objects.filter(merchant=request.merchant)
        return Response(self.paginated(keys, id_prefix="key", serialize=key_to_dict))


class KeyDetail(ServiceAPIView):
    def get(self, request, key_id):
        api_key = ApiKey.objects.filter(merchant=request.merchant, pk=key_id).first()
        if api_key is None:
            raise not_found("API key")
        return Response(key_to_dict(api_key))


class ChargeInput(serializers.Serializer):
    amount = AmountField()
    currency = CurrencyField()
    metadata = MetadataField(required=False)


class Echo(ServiceAPIView):
    """Validates like a create endpoint and echoes the parsed body and the request context."""

    def post(self, request):
        body = ChargeInput(data=request.data)
        body.is_valid(raise_exception=True)
        return Response(
            {
                "data": body.validated_data,
                "api_version": request.api_version,
                "livemode": request.livemode,
            },
            status=201,
        )


class PublishableEcho(ServiceAPIView):
    allow_publishable_key = True

    def get(self, request):
        return Response({"ok": True})


class TestModeOnly(ServiceAPIView):
    allow_publishable_key = True
    test_mode_only = True

    def get(self, request):
        return Response({"ok": True})


class Boom(ServiceAPIView):
    def get(self, request):
        raise RuntimeError("an unexpected failure with a secret inside")


class Accept(ServiceAPIView):
    """Takes any JSON body: what passes the raw-card guard gets 200."""

    def post(self, request):
        return Response({"received": isinstance(request.data, (dict, list))})


class WorkInput(serializers.Serializer):
    tag = serializers.CharField(max_length=100)
    delay_ms = serializers.IntegerField(min_value=0, max_value=5000, default=0)
    outcome = serializers.ChoiceField(
        ["created", "declined", "failed", "api_error_first", "crash_first", "rate_limited_first"],
        default="created",
    )


class Work(ServiceAPIView):
    """Does committed work (a Merchant row named `tag`) so tests can count executions.

    `delay_ms` holds the request in flight; `declined` and `failed` commit and then answer
    402 or 422, as a declined or failed payment does; `*_first` fail on the first execution
    only (500, or a 429 as a connector's could be), then succeed.
    """

    def post(self, request, ref=None):
        body = WorkInput(data=request.data)
        body.is_valid(raise_exception=True)
        tag, outcome = body.validated_data["tag"], body.validated_data["outcome"]
        earlier = Merchant.objects.filter(name=tag).count()
        time.sleep(body.validated_data["delay_ms"] / 1000)  # the in-flight window
        merchant = Merchant.objects.create(name=tag, email="work@example.test")
        if outcome == "declined":
            raise CardDeclined(f"Declined; work {merchant.id} exists.", decline_code="do_not_honor")
        if outcome == "failed":
            raise ProcessingFailed(f"Failed; work {merchant.id} exists.")
        if outcome == "api_error_first" and not earlier:
            raise ApiFailure("The first execution fails.")
        if outcome == "crash_first" and not earlier:
            raise RuntimeError("the first execution crashes")
        if outcome == "rate_limited_first" and not earlier:
            raise RateLimited("The first execution is rate limited.")
        return Response({"id": merchant.id, "execution": earlier + 1}, status=201)


class Tokenize(ServiceAPIView):
    """Stands in for the sandbox tokenizer: takes card data and ignores Idempotency-Key."""

    accepts_card_data = True
    ignores_idempotency_key = True

    def post(self, request):
        number = str(request.data.get("number", ""))
        return Response({"id": new_id("tok"), "last4": number[-4:]}, status=201)
