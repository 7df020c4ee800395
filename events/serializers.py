from api.renderers import format_timestamp
from events.models import Event


def event_to_dict(event: Event) -> dict:
    """The event envelope (spec "Event object"), as the API returns it and webhooks send it."""
    return {
        "id": event.id,
        "object": "event",
        "type": event.type,
        "api_version": event.api_version,
        "livemode": event.livemode,
        "created": format_timestamp(event.created),
        # Ours, additive: the resource's change number (docs/webhooks.md "Ordering").
        "resource_version": event.resource_version,
        "data": {
            "object": event.data["object"],
            "previous_attributes": event.data.get("previous_attributes", {}),
        },
    }
