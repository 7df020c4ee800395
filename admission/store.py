"""The one store of admission's counters (docs/admission.md "One store").

Redis when the cache named by `API_RATE_LIMIT_CACHE` is a Redis cache (REDIS_URL set): every
web process of the fleet shares the counters, which Lua scripts change atomically on Redis's
own clock (`TIME`), so the nodes' clocks never meet in one counter. Otherwise (the embedded
defaults, no Redis) each process counts alone, under a lock, on its own clock.

The one fallback: Redis configured but unreachable (an error, or its breaker open) lets the
request through, with one warning a minute per process. Refusing every merchant because a
counter is away would turn a Redis outage into an API outage; the database stays the truth.
"""

import logging
import time

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

from infra.breaker import Unavailable
from infra.redisclient import evalsha, primary_client, server_breaker

log = logging.getLogger("admission")

STORE_UNAVAILABLE = (RedisError, Unavailable)  # what failing open catches
WARNING_INTERVAL = 60.0  # seconds between two "unavailable" warnings of a process
_last_warning = [0.0]  # time.monotonic() of the last one
_scripts: dict = {}  # (client, source) -> registered script


def cache():
    return caches[settings.API_RATE_LIMIT_CACHE]


def shared() -> RedisCache | None:
    """The Redis cache the fleet shares, or None: count in this process."""
    store = cache()
    return store if isinstance(store, RedisCache) else None


def run_script(redis_cache: RedisCache, source: str, keys: list[str], args: list):
    """Runs the Lua `source` on the primary, through its breaker. The keys get the cache's own
    prefix and version, as cache.get() would give them (not checked for memcached, as
    cache.get() checks them: the keys are ours). A script is registered once per client:
    hashing it on every request cost more CPU than the round trip to Redis."""
    client = primary_client(redis_cache)
    script = _scripts.get((client, source))
    if script is None:
        script = _scripts[(client, source)] = client.register_script(source)
    keys = [redis_cache.make_key(key) for key in keys]
    return server_breaker(client).call(evalsha, client, script, keys, args)


def warn_failing_open(what: str, error: Exception) -> None:
    """One warning per interval, without a traceback: an outage is one event, not one per
    request (the breaker logs what failed)."""
    now = time.monotonic()
    if now - _last_warning[0] >= WARNING_INTERVAL:
        _last_warning[0] = now
        log.warning("%s unavailable (%s); requests allowed", what, type(error).__name__)


def forget_warnings() -> None:
    """Tests: each starts as if no warning had been given."""
    _last_warning[0] = 0.0
