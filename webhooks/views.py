"""`/v1/webhook-endpoints` and `/v1/events` (spec "Endpoints > Webhook endpoints, Events")."""

from rest_framework.response import Response

from api.views import ServiceAPIView
from webhooks import services
from webhooks.serializers import EndpointInput, endpoint_to_dict


class EndpointList(ServiceAPIView):
    def get(self, request):
        endpoints = services.enabled_endpoints(request.merchant, request.livemode)
        return Response(self.paginated(endpoints, id_prefix="whe", serialize=endpoint_to_dict))

    def post(self, request):
        body = EndpointInput(data=request.data)
        body.is_valid(raise_exception=True)
        created = services.endpoint_create(
            merchant=request.merchant, livemode=request.livemode, **body.validated_data
        )
        return Response(endpoint_to_dict(created.endpoint, created.secret), status=201)


class EndpointDetail(ServiceAPIView):
    def get_endpoint(self, request, endpoint_id):
        return services.endpoint_get(
            merchant=request.merchant, livemode=request.livemode, endpoint_id=endpoint_id
        )

    def get(self, request, endpoint_id):
        return Response(endpoint_to_dict(self.get_endpoint(request, endpoint_id)))

    def delete(self, request, endpoint_id):
        endpoint = services.endpoint_delete(endpoint=self.get_endpoint(request, endpoint_id))
        return Response({"id": endpoint.id, "object": "webhook_endpoint", "deleted": True})


class EndpointRollSecret(EndpointDetail):
    def post(self, request, endpoint_id):
        rolled = services.endpoint_roll_secret(endpoint=self.get_endpoint(request, endpoint_id))
        return Response(endpoint_to_dict(rolled.endpoint, rolled.secret))
