"""`/v1/webhook-endpoints` and `/v1/events` (spec "Endpoints > Webhook endpoints, Events")."""

from django.conf import settings
from django.utils import timezone
from rest_framework.response import Response

from api.errors import ValidationFailed
from api.pagination import list_envelope, paginate, parse_limit
from api.views import ServiceAPIView
from events import feed
from events.serializers import event_to_dict
from webhooks import openapi, recovery, selectors, services
from webhooks.crypto import StoredResponses
from webhooks.health import health_of
from webhooks.serializers import (
    EndpointInput,
    EndpointUpdateInput,
    RecoverInput,
    ResendInput,
    endpoint_to_dict,
    event_with_attempts,
    recovery_to_dict,
)


def validated(serializer_class, request) -> dict:
    """The request body through its input serializer (400 in the envelope otherwise)."""
    body = serializer_class(data=request.data)
    body.is_valid(raise_exception=True)
    return body.validated_data


def with_health(endpoint, secret: str | None = None) -> dict:
    (health,) = health_of([endpoint], timezone.now()).values()
    return endpoint_to_dict(endpoint, secret, health)


class EndpointList(ServiceAPIView):
    stored_response_cipher = StoredResponses()  # a create's response shows the secret

    @openapi.endpoint_list
    def get(self, request):
        endpoints = selectors.endpoints_of(request.merchant, request.livemode)
        items, has_more, next_cursor = paginate(endpoints, request.query_params, id_prefix="whe")
        health = health_of(items, timezone.now())  # two queries for the page
        listed = [endpoint_to_dict(e, health=health[e.id]) for e in items]
        return Response(list_envelope(listed, has_more, next_cursor))

    @openapi.endpoint_create
    def post(self, request):
        created = services.endpoint_create(
            merchant=request.merchant,
            livemode=request.livemode,
            **validated(EndpointInput, request),
        )
        return Response(with_health(created.endpoint, created.secret), status=201)


class EndpointView(ServiceAPIView):
    def get_endpoint(self, request, endpoint_id):
        return services.endpoint_get(
            merchant=request.merchant, livemode=request.livemode, endpoint_id=endpoint_id
        )


class EndpointDetail(EndpointView):
    @openapi.endpoint_retrieve
    def get(self, request, endpoint_id):
        return Response(with_health(self.get_endpoint(request, endpoint_id)))

    @openapi.endpoint_update
    def post(self, request, endpoint_id):
        endpoint = services.endpoint_update(
            endpoint=self.get_endpoint(request, endpoint_id),
            actor="api",
            **validated(EndpointUpdateInput, request),
        )
        return Response(with_health(endpoint))

    @openapi.endpoint_delete
    def delete(self, request, endpoint_id):
        endpoint = services.endpoint_delete(endpoint=self.get_endpoint(request, endpoint_id))
        return Response({"id": endpoint.id, "object": "webhook_endpoint", "deleted": True})


class EndpointRollSecret(EndpointView):
    stored_response_cipher = StoredResponses()  # so does a roll's

    @openapi.endpoint_roll_secret
    def post(self, request, endpoint_id):
        rolled = services.endpoint_roll_secret(endpoint=self.get_endpoint(request, endpoint_id))
        return Response(with_health(rolled.endpoint, rolled.secret))


class EndpointEnable(EndpointView):
    @openapi.endpoint_enable
    def post(self, request, endpoint_id):
        endpoint = self.get_endpoint(request, endpoint_id)
        return Response(with_health(services.endpoint_enable(endpoint=endpoint, actor="api")))


class EndpointPause(EndpointView):
    @openapi.endpoint_pause
    def post(self, request, endpoint_id):
        endpoint = self.get_endpoint(request, endpoint_id)
        return Response(with_health(services.endpoint_pause(endpoint=endpoint, actor="api")))


class EndpointResume(EndpointView):
    @openapi.endpoint_resume
    def post(self, request, endpoint_id):
        endpoint = self.get_endpoint(request, endpoint_id)
        return Response(with_health(services.endpoint_resume(endpoint=endpoint, actor="api")))


class EndpointRecover(EndpointView):
    """202: the attempts are made by the workers; they appear on GET /v1/events/:id."""

    @openapi.endpoint_recover
    def post(self, request, endpoint_id):
        body = validated(RecoverInput, request)
        recovered = recovery.endpoint_recover(
            endpoint=self.get_endpoint(request, endpoint_id),
            since=body["since"],
            starting_after=body.get("starting_after") or None,
            actor="api",
        )
        return Response(recovery_to_dict(recovered), status=202)


class EventList(ServiceAPIView):
    @openapi.event_list
    def get(self, request):
        params = request.query_params
        events = selectors.events_of(
            request.merchant,
            request.livemode,
            type=text_filter(params, "type"),
            resource=text_filter(params, "resource"),
        )
        return Response(self.paginated(events, id_prefix="evt", serialize=event_to_dict))


class EventFeed(ServiceAPIView):
    """The merchant's events of the key's mode, oldest first, in an order no later commit can
    slip behind, a cursor after each (events/feed.py); `wait` long-polls an empty page;
    `after=now` answers the feed's end."""

    @openapi.event_feed
    def get(self, request):
        params = request.query_params
        limit, wait = parse_limit(params), wait_seconds(params)
        if params.get("after") == "now":
            page = feed.end_of_feed(request.merchant, request.livemode)
        else:
            page = feed.read_feed(
                merchant=request.merchant,
                livemode=request.livemode,
                after=feed.decode_cursor(params.get("after")),
                limit=limit,
                wait=wait,
            )
        entries = [
            {
                "object": "feed_entry",
                "cursor": feed.encode_cursor(feed.position_of(event)),
                "event": event_to_dict(event),
            }
            for event in page.events
        ]
        return Response(list_envelope(entries, page.has_more, page.next_cursor))


def wait_seconds(params) -> int:
    raw = params.get("wait", "0")
    if not (raw.isascii() and raw.isdigit()) or int(raw) > settings.EVENT_FEED_MAX_WAIT:
        raise ValidationFailed(
            f"wait must be an integer from 0 to {settings.EVENT_FEED_MAX_WAIT} (seconds).",
            param="wait",
        )
    return int(raw)


def text_filter(params, name: str) -> str | None:
    """A query parameter compared with stored text: none holds a NUL byte, and PostgreSQL
    cannot be sent one, so one is a 400 naming the parameter."""
    value = params.get(name)
    if value is not None and "\x00" in value:
        raise ValidationFailed(f"Invalid {name}: must not contain NUL characters.", param=name)
    return value


class EventDetail(ServiceAPIView):
    @openapi.event_retrieve
    def get(self, request, event_id):
        event = selectors.event_get(
            merchant=request.merchant, livemode=request.livemode, event_id=event_id
        )
        return Response(event_with_attempts(event))


class EventResend(ServiceAPIView):
    """202: the attempts are made by the workers; they appear on GET /v1/events/:id."""

    @openapi.event_resend
    def post(self, request, event_id):
        body = validated(ResendInput, request)
        event = selectors.event_get(
            merchant=request.merchant, livemode=request.livemode, event_id=event_id
        )
        services.resend_event(event=event, endpoint_id=body.get("endpoint") or None)
        return Response(event_with_attempts(event), status=202)
