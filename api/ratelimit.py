"""Per-API-key rate limits: a token bucket per key in the cache (docs/request-safety.md).

A bucket holds up to `burst` tokens and refills at `rate` tokens a second; each request takes
its cost (api.budgets.request_cost: one, more for a large body or an inline delivery). With
Redis (REDIS_URL set) the take is one Lua script, atomic across every web process,
on Redis's own clock (`TIME`): the nodes' clocks never meet in one bucket, so a node whose clock
runs ahead cannot refill it (issue 21). With the embedded local-memory cache it is a
lock-guarded read and write, exact within one process, on that process's clock. Limits come
from settings.API_RATE_LIMITS per mode, read on every request so tests and operators can
change them. A process that was told to wait remembers it (`_refused`): the same bucket's next
requests until then are refused without a round trip, so a flood of refusals stays cheap.
"""

import logging
import math
import threading
import time

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError
from rest_framework.throttling import BaseThrottle

from api.budgets import request_cost
from api.clientaddress import client_address
from api.errors import RATE_LIMIT_SCOPE_HEADER, RateLimited
from infra.breaker import Unavailable
from infra.redisclient import primary_client, server_breaker

log = logging.getLogger("api.ratelimit")

# KEYS[1] the bucket; ARGV rate, burst, cost. Returns "0" when `cost` tokens were taken,
# otherwise the seconds until that many are available. Strings, because Redis truncates Lua
# numbers to integers (and tostring() keeps only 14 digits: too few for a unix time with
# fractions). TIME before a write is allowed since Redis 5 (scripts replicate their effects).
TAKE_TOKEN_LUA = """
local rate, burst, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens >= cost then tokens = tokens - cost else wait = (cost - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at',
           string.format('%.17g', now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return string.format('%.17g', wait)
"""

WARNING_INTERVAL = 60.0  # seconds between two "unavailable" warnings of a process
_local_lock = threading.Lock()


def _take_token_locally(cache, key: str, rate: float, burst: int, cost: int) -> float:
    """The Lua script's arithmetic, for the local-memory cache."""
    with _local_lock:
        now = time.time()
        tokens, at = cache.get(key, (burst, now))
        tokens = min(burst, tokens + max(0.0, now - at) * rate)
        wait = 0.0 if tokens >= cost else (cost - tokens) / rate
        if tokens >= cost:
            tokens -= cost
        cache.set(key, (tokens, now), timeout=math.ceil(burst / rate) + 1)
    return wait


def _take_token_in_redis(cache: RedisCache, key: str, rate: float, burst: int, cost: int):
    # Django's cache API has no scripting; its client (redis-py) does. The key gets the
    # cache's own prefix and version, as cache.get() would give it.
    key = cache.make_and_validate_key(key)
    client = primary_client(cache)
    take = server_breaker(client).call
    return float(take(_take_token_script(client), keys=[key], args=[rate, burst, cost]))


def _take_token_script(client):
    """The script, registered once per client: hashing it on every request cost more CPU than
    the round trip to Redis."""
    script = _scripts.get(client)
    if script is None:
        script = _scripts[client] = client.register_script(TAKE_TOKEN_LUA)
    return script


_scripts: dict = {}  # client -> registered script


# bucket -> time.time() until which it was found empty. Only a hint: a process's own clock
# measures its own wait, so skew between nodes does not matter here.
_refused: dict[str, float] = {}
REFUSED_ENTRIES = 10_000  # forgotten all at once past this (a scan of addresses)


def take_token(bucket: str, *, rate: float, burst: int, cost: int = 1) -> float:
    """Takes `cost` tokens (at most `burst`) from `bucket`: 0 when granted, else the seconds
    until they are there."""
    now = time.time()
    until = _refused.get(bucket, 0.0)
    if until > now:
        return until - now
    cost = min(cost, burst)
    cache = caches[settings.API_RATE_LIMIT_CACHE]
    take = _take_token_in_redis if isinstance(cache, RedisCache) else _take_token_locally
    wait = take(cache, f"ratelimit:{bucket}", rate, burst, cost)
    # Remembered until one token is there: a cheaper request may pass before this one would.
    empty_for = wait - (cost - 1) / rate
    if empty_for > 0:
        if len(_refused) >= REFUSED_ENTRIES:
            _refused.clear()
        _refused[bucket] = now + empty_for
    return wait


def forget_refusals() -> None:
    """Tests: each starts with no bucket remembered as empty."""
    _refused.clear()


_last_warning = [0.0]  # time.monotonic() of the last "unavailable" warning


def _warn_failing_open(error: Exception) -> None:
    """One warning per interval, without a traceback: an outage is one event, not one per
    request (the breaker logs what failed)."""
    now = time.monotonic()
    if now - _last_warning[0] >= WARNING_INTERVAL:
        _last_warning[0] = now
        log.warning("rate limiter unavailable (%s); requests allowed", type(error).__name__)


def _address_bucket(request) -> str:
    return f"address:{client_address(request)}"


def refuse_over_address_limit(request) -> None:
    """Callers without a secret key (none, a malformed or unknown one, a publishable one) share
    one bucket per client address (settings.API_ADDRESS_RATE_LIMIT): 429 when it is empty. A
    publishable key is public by design, so its own bucket would be anyone's to drain."""
    limits = settings.API_ADDRESS_RATE_LIMIT
    try:
        wait = take_token(_address_bucket(request), rate=limits["rate"], burst=limits["burst"])
    except (RedisError, Unavailable) as error:
        _warn_failing_open(error)
        return
    if wait > 0:
        raise _address_refusal(wait)


def refuse_refused_address(request) -> None:
    """429 at once, with no round trip, while this process knows the address's bucket to be
    empty: asked before a key is looked up in the database, so a flood of made-up keys costs
    no query."""
    wait = _refused.get(_address_bucket(request), 0.0) - time.time()
    if wait > 0:
        raise _address_refusal(wait)


def _address_refusal(wait: float) -> RateLimited:
    seconds = max(1, math.ceil(wait))
    return RateLimited(
        f"Too many requests from this address without a valid secret key; retry in {seconds} s.",
        headers={"Retry-After": str(seconds), RATE_LIMIT_SCOPE_HEADER: "address"},
    )


class ApiKeyRateLimit(BaseThrottle):
    """DRF throttle (runs after authentication and permissions): 429 `rate_limit_exceeded`
    with `Retry-After` through api.errors. Unauthenticated requests never get here; requests
    with a publishable key were counted per address by authentication instead."""

    def allow_request(self, request, view):
        api_key = request.auth
        if not api_key.is_secret:
            return True
        limits = settings.API_RATE_LIMITS["live" if api_key.livemode else "test"]
        cost = request_cost(request, view)  # a large body takes more tokens, as more units
        try:
            self.seconds = take_token(
                api_key.id, rate=limits["rate"], burst=limits["burst"], cost=cost
            )
        except (RedisError, Unavailable) as error:
            # Redis down: serve rather than refuse every merchant; the database is the truth.
            _warn_failing_open(error)
            return True
        return self.seconds == 0

    def wait(self):
        return self.seconds
