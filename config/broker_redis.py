"""The Redis broker: kombu's Redis transport, with a closed connection reported as a lost one.

When Redis dies under a worker, Celery's consumer collects the connection (closing its
channels) and then closes it. kombu's channel close stops at the first broker error; when one
channel's fails (the broker is gone), the rest are left open, and the connection's settings
are dropped (`Connection.collect` sets the transport's client to None). Celery's close then
closes them again: a channel holding unacknowledged messages restores them through a new
client built from those settings, which raised AttributeError. Celery takes that for an
unrecoverable error and the worker exits (issue 12, seen in `make faults`; reproduced in
tests/test_broker_redis.py).

Here a channel that needs the connection's settings once they are gone raises Redis's
ConnectionError: a lost broker, which every caller already handles (the close is abandoned,
the worker reconnects). The unacknowledged messages it could not restore stay in Redis's
unacked set, which kombu restores after its visibility timeout, if Redis kept them; a webhook
nudge lost with Redis is sent again by beat's tick (the delivery rows are the truth).

Registered for `redis://` and `rediss://` URLs (kombu's own names, so its TLS set-up for
`rediss` still applies).
"""

from kombu.transport import TRANSPORT_ALIASES, redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(redis.Channel):
    def _connparams(self, asynchronous=False):
        if getattr(self.connection, "client", None) is None:
            raise RedisConnectionError("the broker connection is closed")
        return super()._connparams(asynchronous=asynchronous)


class Transport(redis.Transport):
    Channel = Channel


TRANSPORT_ALIASES["redis"] = TRANSPORT_ALIASES["rediss"] = "config.broker_redis:Transport"
