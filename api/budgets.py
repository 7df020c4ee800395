"""A merchant's budget of concurrent work, and the load shedder (docs/request-safety.md
"Budgets").

Concurrency: every request a key authenticates holds units of its (merchant, mode) budget
while it runs, `API_CONCURRENCY_LIMITS` units at most; a cheap request holds one, an expensive
one more (its body's size, a view's `budget_cost`); one over the limit is 429
`rate_limit_exceeded` before any work. Other caps (simulated latency's) hold units of their own
scopes through the same `hold()`, all or none at once. With Redis the units are members of a
sorted set per scope, scored by when they expire on Redis's clock (a process killed mid-request
gives its units back after `API_CONCURRENCY_HOLD_SECONDS`), taken and given back by Lua
scripts; on the embedded defaults, a dict per process under a lock. Redis unreachable: the
units are not counted (fails open, as the rate limiter).

Shedding: each process counts the requests its threads are running. When most of the
`WEB_THREADS` are busy, a `/v1` request that presents no key (or a malformed one) is refused
first, then test-mode ones; live keys are never shed, so the last threads stay theirs. The
mode is read from the key's prefix before any lookup: shedding costs no HMAC and no query.
"""

import logging
import threading
import time
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

from api.errors import RateLimited
from api.middleware import error_response
from infra.breaker import Unavailable
from infra.redisclient import primary_client, server_breaker

log = logging.getLogger("api.budgets")

# KEYS the scopes; ARGV holder, hold seconds, then (limit, cost) per scope. Returns 0 when
# every scope had room (the units are taken in all), else the index of the first that had
# not (nothing taken). Expiry on Redis's clock, so the nodes' clocks do not matter.
HOLD_LUA = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local holder, seconds = ARGV[1], tonumber(ARGV[2])
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if redis.call('ZCARD', key) + tonumber(ARGV[2 + 2 * i]) > tonumber(ARGV[1 + 2 * i]) then
    return i
  end
end
for i, key in ipairs(KEYS) do
  for unit = 1, tonumber(ARGV[2 + 2 * i]) do
    redis.call('ZADD', key, now + seconds, holder .. ':' .. unit)
  end
  redis.call('PEXPIRE', key, math.ceil(seconds * 1000) + 1000)
end
return 0
"""
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
        except (RedisError, Unavailable):
            pass  # the units expire on their own


class Refused(Exception):
    def __init__(self, scope: Scope):
        super().__init__(scope.key)
        self.scope = scope


def hold(*scopes: Scope) -> Hold:
    """Takes each scope's units, all or none: a Hold, or Refused naming the first scope
    without room."""
    holder = uuid.uuid4().hex
    try:
        refused = _store().take(scopes, holder)
    except (RedisError, Unavailable) as error:
        _warn_uncounted(error)
        return Hold(scopes, holder, counted=False)
    if refused is not None:
        raise Refused(refused)
    return Hold(scopes, holder, counted=True)


class _RedisStore:
    def __init__(self, cache: RedisCache):
        self.cache = cache
        self.client = primary_client(cache)

    def _script(self, source: str):
        script = _scripts.get((self.client, source))
        if script is None:
            script = _scripts[(self.client, source)] = self.client.register_script(source)
        return script

    def _keys(self, scopes) -> list[str]:
        return [self.cache.make_and_validate_key(f"budget:{scope.key}") for scope in scopes]

    def take(self, scopes, holder: str) -> Scope | None:
        args = [holder, settings.API_CONCURRENCY_HOLD_SECONDS]
        for scope in scopes:
            args += [scope.limit, scope.units]
        call = server_breaker(self.client).call
        index = int(call(self._script(HOLD_LUA), keys=self._keys(scopes), args=args))
        return scopes[index - 1] if index else None

    def release(self, scopes, holder: str) -> None:
        args = [holder, *(scope.units for scope in scopes)]
        call = server_breaker(self.client).call
        call(self._script(RELEASE_LUA), keys=self._keys(scopes), args=args)


_scripts: dict = {}  # (client, source) -> registered script


class _LocalStore:
    """The scripts' arithmetic for one process (embedded defaults, no Redis)."""

    lock = threading.Lock()
    held: dict[str, dict[str, tuple[float, int]]] = {}  # scope -> holder -> (expiry, units)

    def take(self, scopes, holder: str) -> Scope | None:
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
    cache = caches[settings.API_RATE_LIMIT_CACHE]
    return _RedisStore(cache) if isinstance(cache, RedisCache) else _LocalStore()


WARNING_INTERVAL = 60.0
_last_warning = [0.0]


def _warn_uncounted(error: Exception) -> None:
    now = time.monotonic()
    if now - _last_warning[0] >= WARNING_INTERVAL:
        _last_warning[0] = now
        log.warning("concurrency budgets unavailable (%s); requests allowed", type(error).__name__)


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


def admit(request, view) -> Hold:
    """The request's units of its merchant's budget for its mode (and key kind), or 429."""
    api_key = request.auth
    cost = request_cost(request, view)
    scope = merchant_scope(api_key.merchant_id, api_key.mode, cost, not api_key.is_secret)
    try:
        return hold(scope)
    except Refused:
        raise RateLimited(
            f"Too many concurrent requests in {api_key.mode} mode on this account "
            f"(at most {scope.limit} units of work at once; this request costs "
            f"{scope.units}); retry shortly.",
            headers={"Retry-After": "1"},
        ) from None


# --- the load shedder -------------------------------------------------------------------------

LIVE, TEST, ANONYMOUS = "live", "test", "anonymous"


def priority(authorization: str) -> str:
    """What the key presented claims to be, from its prefix alone (checked later)."""
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token.startswith("svc_"):
        return ANONYMOUS
    return LIVE if token[7:12] == "live_" else TEST


def shed(priority_: str, busy: int) -> bool:
    """With `busy` threads running (this request's included): anonymous requests are shed
    past half of WEB_THREADS, test ones when fewer than API_LIVE_RESERVED_THREADS are left."""
    threads = settings.WEB_THREADS
    if not settings.API_LOAD_SHEDDING or priority_ == LIVE:
        return False
    if priority_ == TEST:  # one thread at least stays open to test mode
        return busy > threads - min(settings.API_LIVE_RESERVED_THREADS, threads - 1)
    return busy > max(1, threads // 2)


_busy_lock = threading.Lock()
_busy = [0]


class LoadShedMiddleware:
    """Counts the requests this process is running; refuses `/v1` ones of a lower priority
    while too many are (429 `rate_limit_exceeded`, `Retry-After: 1`)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with _busy_lock:
            _busy[0] += 1
            busy = _busy[0]
        try:
            if request.path.startswith("/v1") and shed(
                priority(request.META.get("HTTP_AUTHORIZATION", "")), busy
            ):
                return error_response(
                    RateLimited(
                        "The service is busy; live-mode requests are served first. Retry shortly.",
                        headers={"Retry-After": "1"},
                    ),
                    request,
                )
            return self.get_response(request)
        finally:
            with _busy_lock:
                _busy[0] -= 1
