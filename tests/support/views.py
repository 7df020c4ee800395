"""Test-only views exercising the shared API machinery before real resources use it."""

from rest_framework import serializers
from rest_framework.response import Response

from accounts.models import ApiKey
from api.errors import not_found
from api.fields import AmountField, CurrencyField, MetadataField
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
