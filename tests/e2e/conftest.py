# The real HTTPS receiver and its throwaway CA, shared with the webhooks tests.
from tests.webhooks.conftest import ca_bundle, loopback_allowed, receiver, webhook_ca  # noqa: F401
