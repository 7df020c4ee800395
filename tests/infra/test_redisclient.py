"""infra.redisclient.evalsha: a script's answer exactly as redis-py's Script gives it."""

import pytest
from django.core.cache import caches
from redis.exceptions import DataError, ResponseError

from infra.redisclient import _packed, _script_connection, evalsha, primary_client

# Answers of every kind a script gives back: integers, text, nested tables, nil, a float
# (as text: Lua numbers come back truncated), and the keys and arguments it was given.
MIXED = """
return {KEYS[1], ARGV[1], tonumber(ARGV[2]) + 1, tostring(tonumber(ARGV[3]) * 2),
        {1, {"two", false}}, redis.call("SET", KEYS[1], ARGV[1]), #ARGV}
"""


@pytest.fixture
def client(redis):
    return primary_client(caches["default"])


def test_a_script_answers_as_redis_pys_script_answers(client):
    script = client.register_script(MIXED)
    arguments = {"keys": ["evalsha:k"], "args": ["héllo", 41, 1.25, b"\x00bytes"]}
    assert evalsha(client, script, **{k: list(v) for k, v in arguments.items()}) == script(
        **arguments
    )
    assert client.get("evalsha:k") == "héllo".encode()


def test_a_script_the_server_forgot_is_loaded_again(client):
    script = client.register_script("return ARGV[1] .. '!'")
    script(keys=[], args=["first"])  # known to the server
    client.script_flush()
    assert evalsha(client, script, [], ["again"]) == b"again!"
    assert client.script_exists(script.sha) == [True]


def test_a_scripts_error_is_raised_and_its_connection_kept_usable(client):
    script = client.register_script("return redis.error_reply('refused here')")
    with pytest.raises(ResponseError, match="refused here"):
        evalsha(client, script, [], [])
    kept = _script_connection(client.connection_pool)
    assert kept.is_connected  # the error was read whole: no reason to close it
    assert evalsha(client, client.register_script("return 7"), [], []) == 7
    assert _script_connection(client.connection_pool) is kept


def test_scripts_go_on_one_connection_which_is_opened_again_once_the_server_drops_it(client):
    script = client.register_script("return ARGV[1]")
    assert evalsha(client, script, [], ["one"]) == b"one"
    kept = _script_connection(client.connection_pool)
    assert kept not in client.connection_pool._in_use_connections  # never checked out
    client.client_kill_filter(skipme=True)  # every other connection: the kept one too
    assert evalsha(client, script, [], ["two"]) == b"two"  # its retry opens it again
    assert _script_connection(client.connection_pool) is kept and kept.is_connected


def test_arguments_are_written_as_redis_pys_encoder_writes_them(client):
    arguments = ["EVALSHA", "héllo", 7, -3, 0.1, 1e20, b"raw"]
    pool = client.connection_pool
    connection = pool.get_connection()
    try:
        assert _packed(*arguments) == b"".join(connection.pack_command(*arguments))
    finally:
        pool.release(connection)
    with pytest.raises(DataError):
        _packed("EVALSHA", True)  # redis-py refuses a bool too
