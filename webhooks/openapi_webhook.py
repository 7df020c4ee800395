"""The `webhooks` section of the OpenAPI description: a delivery as its receiver gets it
(docs/openapi.md), split from webhooks/openapi.py, which documents the API's operations."""

from drf_spectacular.utils import OpenApiWebhook


def delivery_header(name: str, schema: dict, description: str = "") -> dict:
    return {
        "in": "header",
        "name": name,
        "required": True,
        "schema": schema,
        "description": description,
    }


# Every `v1=` is a hex HMAC-SHA256 (webhooks/signing.py); one per active secret.
SIGNATURE_PATTERN = r"^t=[0-9]+(,v1=[0-9a-f]{64})+$"

# The delivery as its receiver sees it (OpenAPI 3.1 `webhooks`; SPECTACULAR_SETTINGS["WEBHOOKS"]),
# with the headers webhooks.attempts.delivery_headers sends. A raw operation: drf-spectacular
# would give a webhook neither header parameters nor anything but our API's error answers.
EVENT_WEBHOOK = OpenApiWebhook(
    name="event",
    decorator={
        "post": {
            "operationId": "event_delivered",
            # No API key: the receiver checks Service-Signature (spec "Signature").
            "security": [],
            "summary": "An event, delivered to a webhook endpoint",
            "description": (
                "POSTed to every enabled endpoint subscribed to the event's type. "
                "`Service-Signature` is `t=<unix seconds>,v1=<hex HMAC-SHA256 of "
                '"<t>.<raw body>" under the endpoint secret>`; for 24 hours after a roll-secret '
                "it holds one `v1=` per active secret. Any 2xx ends the retries."
            ),
            "parameters": [
                delivery_header(
                    "Service-Signature", {"type": "string", "pattern": SIGNATURE_PATTERN}
                ),
                delivery_header("Service-Event-Id", {"type": "string"}),
                delivery_header("Service-Event-Type", {"$ref": "#/components/schemas/EventType"}),
                delivery_header(
                    "Idempotency-Key", {"type": "string"}, "The event id: deduplicate on it."
                ),
            ],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Event"}}},
            },
            "responses": {"2XX": {"description": "Received: no more attempts."}},
        }
    },
)
