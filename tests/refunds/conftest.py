# The real HTTPS receiver and endpoints of the webhook tests, for the timeline's deliveries.
from tests.webhooks.conftest import (  # noqa: F401
    ca_bundle,
    endpoint_for,
    loopback_allowed,
    receiver,
    webhook_ca,
)
