"""The redis-py client behind Django's Redis cache, for what the cache API cannot say: a Lua
script (admission.store), a read that must not go to a replica (accounts.keycache); and the
circuit breaker of its server (infra.breaker), which every use in the request path goes through."""

from django.core.cache.backends.redis import RedisCache
from redis import Redis
from redis.exceptions import ConnectionError, TimeoutError

from infra.breaker import Breaker, breaker

_clients: dict = {}  # connection pool -> client
_breakers: dict = {}  # client -> its server's breaker


def primary_client(cache) -> Redis | None:
    """A client on `cache`'s first server (the one Django writes to), or None when the cache is
    not Redis. One per connection pool (Django's caches, and so their pools, are per thread):
    building one per call costs more CPU than the round trip."""
    if not isinstance(cache, RedisCache):
        return None
    redis_cache = cache._cache  # Django's RedisCacheClient (pinned Django 5.2)
    pool = redis_cache._get_connection_pool(True)
    client = _clients.get(pool)
    if client is None:
        client = _clients[pool] = redis_cache.get_client(write=True)
    return client


def server_breaker(client: Redis) -> Breaker:
    """The breaker of `client`'s server, shared by every client of it in the process (each
    thread has its own): a server that fails is presumed down for every one of them."""
    found = _breakers.get(client)
    if found is None:
        found = _breakers[client] = breaker(_server_name(client), (ConnectionError, TimeoutError))
    return found


def _server_name(client: Redis) -> str:
    kwargs = client.connection_pool.connection_kwargs
    where = kwargs.get("path") or f"{kwargs.get('host')}:{kwargs.get('port')}"
    return f"Redis at {where}"
