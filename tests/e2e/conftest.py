# deploy/haproxy.cfg in front of stand-in pools (the routing and refusal tests).
from tests.e2e.standins import proxy_for  # noqa: F401

# The real HTTPS receiver and its throwaway CA, shared with the webhooks tests.
from tests.webhooks.conftest import ca_bundle, loopback_allowed, receiver, webhook_ca  # noqa: F401
