"""A merchant's budget of concurrent work (docs/admission.md "Concurrency budgets").

Every request a key authenticates holds units of its (merchant, mode) budget while it runs,
`API_CONCURRENCY_LIMITS` units at most; a cheap request holds one, an expensive one more (its
body's size, a view's `budget_cost`); one over the limit is 429 `rate_limit_exceeded` before
any work. Other caps (simulated latency's) hold units of their own scopes through the same
`hold()`, all or none at once. In the store (admission.store): with Redis the units are
members of a sorted set per scope, scored by when they expire on Redis's clock (a process
killed mid-request gives its units back after `API_CONCURRENCY_HOLD_SECONDS`), taken and
given back by Lua scripts; without Redis, a dict per process under a lock.
"""

import threading
import time
import uuid
from dataclasses import dataclass

from django.conf import settings

from admission import buckets, store
from api.errors import RateLimited

# A Lua function: `keys` the scopes; `args` holder, hold seconds, then (limit, cost) per
# scope. Returns 0 when every scope had room (the units are taken in all), else the index of
# the first that had not (nothing taken). Expiry on Redis's clock, so the nodes' clocks do not
# matter.
HOLD_FUNCTION = """
local function hold(keys, args)
  local clock = redis.call('TIME')
  local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
  local holder, seconds = args[1], tonumber(args[2])
  for i, key in ipairs(keys) do
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    if redis.call('ZCARD', key) + tonumber(args[2 + 2 * i]) > tonumber(args[1 + 2 * i]) then
      return i
    end
  end
  for i, key in ipairs(keys) do
    for unit = 1, tonumber(args[2 + 2 * i]) do
      redis.call('ZADD', key, now + seconds, holder .. ':' .. unit)
    end
    redis.call('PEXPIRE', key, math.ceil(seconds * 1000) + 1000)
  end
  return 0
end
"""
HOLD_LUA = HOLD_FUNCTION + "return hold(KEYS, ARGV)"
# A key's tokens, then the units, in one round trip where two ran (a request's admission):
# KEYS the bucket, then the scopes; ARGV the bucket's rate, burst and cost, then HOLD's args.
# Returns {wait, 0} with nothing held when the bucket is short (buckets.TAKE_TOKEN_FUNCTION),
# else {"0", what hold() returned}: a request the budget refuses has spent its tokens, as
# when the two were asked one after the other.
TAKE_AND_HOLD_LUA = (
    buckets.TAKE_TOKEN_FUNCTION
    + HOLD_FUNCTION
    + """
local wait = take_token(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
if wait ~= '0' then return {wait, 0} end
return {wait, hold({unpack(KEYS, 2)}, {unpack(ARGV, 4)})}
"""
)
# KEYS the scopes; ARGV holder, then the cost per scope.
RELEASE_LUA = """
for i, key in ipairs(KEYS) do
  for unit = 1, tonumber(ARGV[1 + i]) do redis.call('ZREM', key, ARGV[1] .. ':' .. unit) end
end
return 0
"""


@dataclass(frozen=True)
class Scope:
    """`cost` units of the budget named `key`, which holds `limit` at most. A cost above the
    limit is lowered to it: the most expensive request still runs, alone."""

    key: str
    limit: int
    cost: int = 1

    @property
    def units(self) -> int:
        return max(1, min(self.cost, self.limit))


class Hold:
    """Units held in some scopes until `release()` (idempotent)."""

    def __init__(self, scopes: tuple[Scope, ...], holder: str, counted: bool):
        self.scopes, self.holder, self.counted = scopes, holder, counted

    def release(self) -> None:
        if not self.counted:
            return
        self.counted = False
        try:
            _store().release(self.scopes, self.holder)
        except store.STORE_UNAVAILABLE:
            pass  # the units expire on their own


class Refused(Exception):
    def __init__(self, scope: Scope):
        super().__init__(scope.key)
        self.scope = scope


def hold(*scopes: Scope) -> Hold:
    """Takes each scope's units, all or none: a Hold, or Refused naming the first scope
    without room."""
    _, held = hold_after_tokens(None, *scopes)
    return held


def hold_after_tokens(take: buckets.Take | None, *scopes: Scope) -> tuple[float, Hold | None]:
    """`take`'s tokens (if any), then each scope's units, all or none, in one round trip to
    Redis: (seconds until the tokens are there, None) when the bucket is short, nothing held;
    else (0, a Hold), or Refused naming the first scope without room (the tokens spent)."""
    if take is not None and (wait := buckets.known_empty_for(take.bucket)) > 0:
        return wait, None
    holder = uuid.uuid4().hex
    try:
        wait, refused = _store().take(take, scopes, holder)
    except store.STORE_UNAVAILABLE as error:
        what = "concurrency budgets" if take is None else "rate limiter and concurrency budgets"
        store.warn_failing_open(what, error)
        return 0.0, Hold(scopes, holder, counted=False)
    if take is not None:
        buckets.remember(take, wait)
    if wait > 0:
        return wait, None
    if refused is not None:
        raise Refused(refused)
    return 0.0, Hold(scopes, holder, counted=True)


def _keys(scopes) -> list[str]:
    return [f"budget:{scope.key}" for scope in scopes]


class _RedisStore:
    def __init__(self, redis_cache):
        self.redis_cache = redis_cache

    def take(self, take, scopes, holder: str) -> tuple[float, Scope | None]:
        args = [holder, settings.API_CONCURRENCY_HOLD_SECONDS]
        for scope in scopes:
            args += [scope.limit, scope.units]
        if take is None:
            wait, index = 0.0, store.run_script(self.redis_cache, HOLD_LUA, _keys(scopes), args)
        else:
            keys, args = [take.key, *_keys(scopes)], [*take.script_args, *args]
            wait, index = store.run_script(self.redis_cache, TAKE_AND_HOLD_LUA, keys, args)
        return float(wait), scopes[int(index) - 1] if int(index) else None

    def release(self, scopes, holder: str) -> None:
        args = [holder, *(scope.units for scope in scopes)]
        store.run_script(self.redis_cache, RELEASE_LUA, _keys(scopes), args)


class _LocalStore:
    """The scripts' arithmetic for one process (embedded defaults, no Redis)."""

    lock = threading.Lock()
    held: dict[str, dict[str, tuple[float, int]]] = {}  # scope -> holder -> (expiry, units)

    def take(self, take, scopes, holder: str) -> tuple[float, Scope | None]:
        wait = 0.0 if take is None else buckets.take_locally(take)
        return (wait, None) if wait > 0 else (0.0, self._take_units(scopes, holder))

    def _take_units(self, scopes, holder: str) -> Scope | None:
        now = time.monotonic()
        with self.lock:
            for scope in scopes:
                held = self.held.setdefault(scope.key, {})
                for stale in [name for name, (expiry, _) in held.items() if expiry <= now]:
                    del held[stale]
                if sum(units for _, units in held.values()) + scope.units > scope.limit:
                    return scope
            expiry = now + settings.API_CONCURRENCY_HOLD_SECONDS
            for scope in scopes:
                self.held[scope.key][holder] = (expiry, scope.units)
        return None

    def release(self, scopes, holder: str) -> None:
        with self.lock:
            for scope in scopes:
                self.held.get(scope.key, {}).pop(holder, None)


def _store():
    redis_cache = store.shared()
    return _LocalStore() if redis_cache is None else _RedisStore(redis_cache)


# --- the request's budget ---------------------------------------------------------------------


def request_cost(request, view) -> int:
    """1 for a cheap request; more for a large body (one more per API_COST_BYTES, which the
    card guard and the parser read in full) and for views that declare a `budget_cost`."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    return getattr(view, "budget_cost", 1) + max(0, length) // settings.API_COST_BYTES


def merchant_scope(merchant_id: str, mode: str, cost: int = 1, publishable: bool = False) -> Scope:
    """The (merchant, mode) budget; its publishable key's requests have one of their own, of
    the same size: that key is public, and whoever floods it must not take the units of the
    merchant's own servers."""
    key = f"{merchant_id}:{mode}" + (":publishable" if publishable else "")
    return Scope(key, settings.API_CONCURRENCY_LIMITS[mode], cost)


def admit(request, view, take: buckets.Take | None) -> tuple[float, Hold | None]:
    """`take` (the key's tokens, or None), then the request's units of its merchant's budget
    for its mode (and key kind): hold_after_tokens()'s answer, or 429 when the budget has no
    room."""
    api_key = request.auth
    cost = request_cost(request, view)
    scope = merchant_scope(api_key.merchant_id, api_key.mode, cost, not api_key.is_secret)
    try:
        return hold_after_tokens(take, scope)
    except Refused:
        raise RateLimited(
            f"Too many concurrent requests in {api_key.mode} mode on this account "
            f"(at most {scope.limit} units of work at once; this request costs "
            f"{scope.units}); retry shortly.",
            headers={"Retry-After": "1"},
        ) from None
