"""The Redis broker transport when Redis dies under a consumer (issue 12, config/broker_redis.py).

A worker has several channels on its connection (tasks, remote control, events); the task
channel holds a message unacknowledged (acks_late) and waits on BRPOP for the next. Redis goes
away, and Celery does what it does on a lost connection: `collect()`, then `close()`. With
kombu's own transport the collect leaves the task channel open (another channel's close failed
first) and the close restores its message through a connection already dropped: an
AttributeError, which Celery takes for an unrecoverable error, and the worker exits. Redis is
real; its death is the proxy of tests/sick.py cutting every connection and refusing new ones.
"""

import socket
import uuid

import pytest
from django.conf import settings
from kombu import Connection, Queue
from kombu.transport.redis import Transport as KombuTransport

from config.broker_redis import Transport
from tests.sick import Proxy

pytestmark = pytest.mark.skipif(
    not settings.REDIS_URL, reason="REDIS_URL is not set: the transport under test needs Redis"
)


@pytest.fixture
def redis_proxy():
    proxy = Proxy(settings.REDIS_URL)
    yield proxy
    proxy.close()


def consumer_connection(url: str, transport) -> Connection:
    """A connection in a worker's state: its default channel holds one message unacknowledged
    and waits on BRPOP for more; a second channel consumes another queue."""
    connection = Connection(url, transport=transport)
    queues = [Queue(f"broker-loss-{uuid.uuid4().hex}", auto_delete=True) for _ in range(2)]
    connection.Producer().publish({"n": 1}, routing_key=queues[0].name, declare=queues)
    held = []
    connection.Consumer(
        [queues[0]], callbacks=[lambda body, message: held.append(message)]
    ).consume()
    connection.Consumer([queues[1]], channel=connection.channel()).consume()
    connection.drain_events(timeout=5)
    with pytest.raises(socket.timeout):
        connection.drain_events(timeout=0.1)  # the queues are empty: BRPOP left pending
    assert len(held) == 1 and not held[0].acknowledged
    assert connection.default_channel._in_poll
    return connection


def lose_the_broker(connection: Connection, proxy: Proxy) -> None:
    proxy.go_down()
    connection.collect(socket_timeout=1)  # as Celery's consumer does on a lost connection
    connection.close()  # and then this


def test_kombus_own_transport_fails_when_its_redis_dies_under_a_consumer(redis_proxy):
    """The bug this transport exists for; when kombu fixes it, config/broker_redis.py can go."""
    connection = consumer_connection(redis_proxy.url, KombuTransport)
    with pytest.raises(AttributeError, match="hostname"):
        lose_the_broker(connection, redis_proxy)


def test_our_transport_closes_when_its_redis_dies_under_a_consumer(redis_proxy):
    connection = consumer_connection(redis_proxy.url, Transport)
    channel = connection.default_channel
    lose_the_broker(connection, redis_proxy)  # kombu's own raises here
    assert channel.closed  # the close went through, its unacked message given up to Redis


def test_redis_urls_use_our_transport():
    assert type(Connection("redis://127.0.0.1:6379/0").transport) is Transport
    assert type(Connection("rediss://127.0.0.1:6380/0").transport) is Transport
