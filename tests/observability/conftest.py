# The real HTTPS receiver, for deliveries that exist (tests/webhooks/conftest.py).
from tests.webhooks.conftest import (  # noqa: F401
    ca_bundle,
    endpoint_for,
    loopback_allowed,
    receiver,
    webhook_ca,
)
