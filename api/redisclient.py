"""The redis-py client behind Django's Redis cache, for what the cache API cannot say: a Lua
script (api.ratelimit), a read that must not go to a replica (accounts.keycache)."""

from django.core.cache.backends.redis import RedisCache
from redis import Redis

_clients: dict = {}  # connection pool -> client


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
