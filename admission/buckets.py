"""Token buckets: a key's rate, and an address's (docs/admission.md "Rate limits").

A bucket holds up to `burst` tokens and refills at `rate` tokens a second; each request takes
its cost (admission.budgets.request_cost: one, more for a large body or an inline delivery).
In the store (admission.store): with Redis the take is one Lua script, atomic across every web
process, on Redis's own clock, so a node whose clock runs ahead cannot refill a bucket (issue
21); without Redis a lock-guarded read and write, exact within one process. A process that was
told to wait remembers it (`_refused`): the same bucket's next requests until then are refused
without a round trip, so a flood of refusals stays cheap.
"""

import math
import threading
import time
from dataclasses import dataclass

from admission import store

# A Lua function: takes `cost` tokens from the bucket `key`; "0" when they were taken,
# otherwise the seconds until that many are available. Strings, because Redis truncates Lua
# numbers to integers (and tostring() keeps only 14 digits: too few for a unix time with
# fractions). TIME before a write is allowed since Redis 5 (scripts replicate their effects).
# Also the first half of admission.budgets' take-and-hold script.
TAKE_TOKEN_FUNCTION = """
local function take_token(key, rate, burst, cost)
  local clock = redis.call('TIME')
  local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
  local state = redis.call('HMGET', key, 'tokens', 'at')
  local tokens = tonumber(state[1]) or burst
  local at = tonumber(state[2]) or now
  tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
  local wait = 0
  if tokens >= cost then tokens = tokens - cost else wait = (cost - tokens) / rate end
  redis.call('HSET', key, 'tokens', string.format('%.17g', tokens), 'at',
             string.format('%.17g', now))
  redis.call('PEXPIRE', key, math.ceil(burst / rate * 1000) + 1000)
  return string.format('%.17g', wait)
end
"""
# KEYS[1] the bucket; ARGV rate, burst, cost.
TAKE_TOKEN_LUA = (
    TAKE_TOKEN_FUNCTION
    + "return take_token(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))"
)


@dataclass(frozen=True)
class Take:
    """`cost` tokens of `bucket`, which holds `burst` at most and refills at `rate` a second.
    A cost above the burst is lowered to it: the dearest request can still pass."""

    bucket: str
    rate: float
    burst: int
    cost: int = 1

    @property
    def key(self) -> str:
        return f"ratelimit:{self.bucket}"

    @property
    def script_args(self) -> list:
        """TAKE_TOKEN_FUNCTION's rate, burst and cost."""
        return [self.rate, self.burst, min(self.cost, self.burst)]


_local_lock = threading.Lock()


def take_locally(take: Take) -> float:
    """The Lua function's arithmetic, in this process's cache."""
    rate, burst, cost = take.script_args
    cache = store.cache()
    with _local_lock:
        now = time.time()
        tokens, at = cache.get(take.key, (burst, now))
        tokens = min(burst, tokens + max(0.0, now - at) * rate)
        wait = 0.0 if tokens >= cost else (cost - tokens) / rate
        if tokens >= cost:
            tokens -= cost
        cache.set(take.key, (tokens, now), timeout=math.ceil(burst / rate) + 1)
    return wait


# bucket -> time.time() until which it was found empty. Only a hint: a process's own clock
# measures its own wait, so skew between nodes does not matter here.
_refused: dict[str, float] = {}
REFUSED_ENTRIES = 10_000  # forgotten all at once past this (a scan of addresses)


def take_token(bucket: str, *, rate: float, burst: int, cost: int = 1) -> float:
    """Takes `cost` tokens (at most `burst`) from `bucket`: 0 when granted, else the seconds
    until they are there. Raises store.STORE_UNAVAILABLE's errors: the caller fails open."""
    take = Take(bucket, rate, burst, cost)
    wait = known_empty_for(bucket)
    if wait > 0:
        return wait
    redis_cache = store.shared()
    if redis_cache is None:
        wait = take_locally(take)
    else:
        wait = float(store.run_script(redis_cache, TAKE_TOKEN_LUA, [take.key], take.script_args))
    remember(take, wait)
    return wait


def remember(take: Take, wait: float) -> None:
    """Notes a bucket found short of `take`'s tokens for `wait` s, until one token is there:
    a cheaper request may pass before this one would."""
    rate, _, cost = take.script_args
    empty_for = wait - (cost - 1) / rate
    if empty_for > 0:
        if len(_refused) >= REFUSED_ENTRIES:
            _refused.clear()
        _refused[take.bucket] = time.time() + empty_for


def known_empty_for(bucket: str) -> float:
    """Seconds this process still knows `bucket` to be empty (0 or less: not known)."""
    return _refused.get(bucket, 0.0) - time.time()


def forget_refusals() -> None:
    """Tests: each starts with no bucket remembered as empty."""
    _refused.clear()
