"""The redis-py client behind Django's Redis cache, for what the cache API cannot say: a Lua
script (admission.store), a read that must not go to a replica (accounts.keycache); and the
circuit breaker of its server (infra.breaker), which every use in the request path goes through."""

import os

from django.core.cache.backends.redis import RedisCache
from redis import Redis
from redis.commands.core import Script
from redis.exceptions import ConnectionError, DataError, NoScriptError, ResponseError, TimeoutError

from infra.breaker import Breaker, breaker

_clients: dict = {}  # connection pool -> client
_breakers: dict = {}  # client -> its server's breaker
_kept: dict = {}  # connection pool -> (process id, the connection scripts are sent on)


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


def evalsha(client: Redis, script: Script, keys: list, args: list):
    """What `script(keys=keys, args=args)` answers, in about a third of redis-py's
    instructions: the EVALSHA packed here in one pass and sent on the connection kept for
    scripts (`_script_connection`), under the connection's own retry policy (redis-py 8's
    path times, records and wraps every call: ~210,000 instructions a script, and a create
    runs two: docs/payments.md). A script the server forgot (a restart) is loaded again and
    run, as Script does."""
    try:
        return _sent(client.connection_pool, _evalsha_command(script, keys, args))
    except NoScriptError:
        script.sha = client.script_load(script.script)
        return _sent(client.connection_pool, _evalsha_command(script, keys, args))


def _evalsha_command(script: Script, keys: list, args: list) -> bytes:
    return _packed("EVALSHA", script.sha, len(keys), *keys, *args)


def _sent(pool, command: bytes):
    """`command`'s answer, read on the script connection of `pool`. A connection that failed
    is closed and opened again for the retry, as redis-py's own commands do; one an exception
    left mid-reply (anything but the server's error answer, read whole) is closed too, so
    the next command never reads a stale reply."""
    connection = _script_connection(pool)
    try:
        return connection.retry.call_with_retry(
            lambda: _send_and_read(connection, command), lambda error: connection.disconnect()
        )
    except ResponseError:
        raise
    except BaseException:
        connection.disconnect()
        raise


def _script_connection(pool):
    """A connection of `pool` that this module keeps for its scripts, made by the pool (its
    settings, its count of connections) but never checked out: the pool's check-out and
    check-in, with their locks, checks and observability records, cost more instructions
    than the round trip (~75 Python calls a script). Django's caches, and so their pools, are
    per thread, so one connection is never shared by two threads; a forked process makes its
    own, as the pool does. Checked as the pool checks what it hands out: a socket with
    something to read (the server's close) is opened again."""
    kept = _kept.get(pool)
    if kept is None or kept[0] != os.getpid():
        kept = _kept[pool] = (os.getpid(), pool.make_connection())
    connection = kept[1]
    if connection.is_connected:  # else the send connects it (once: a hung server is met once)
        try:
            stale = connection.can_read()  # a reply left unread: never here, but then afresh
        except (ConnectionError, TimeoutError, OSError):  # the server closed it
            stale = True
        if stale:
            connection.disconnect()
    return connection


def _send_and_read(connection, command: bytes):
    connection.send_packed_command([command])
    return connection.read_response()


def _packed(*arguments) -> bytes:
    """A command in RESP, its arguments written as redis-py's encoder writes them: bytes as
    they are, str in UTF-8, int and float by repr; anything else refused."""
    parts = [b"*%d\r\n" % len(arguments)]
    for argument in arguments:
        kind = type(argument)
        if kind is str:
            data = argument.encode()
        elif kind is int or kind is float:
            data = repr(argument).encode()
        elif kind is bytes:
            data = argument
        else:
            raise DataError(f"Redis takes no {kind.__name__} argument: {argument!r}")
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)
