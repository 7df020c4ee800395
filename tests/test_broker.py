"""The embedded broker under concurrent publishers: every message arrives whole, none is lost.

kombu's own filesystem transport fails this (issue 11): a reader that lists the folder between
a writer's create and its write moves an empty file, and the consumer dies on JSONDecodeError.
"""

import multiprocessing

import pytest
from kombu import Connection

from config.broker import Transport, folders

# Not fork: the suite's process has threads of its own (the request log's writer, servers of
# other tests), and a child forked while one of them holds a lock can deadlock (Python 3.12
# warns of it).
START_METHOD = "spawn"
PUBLISHERS = 4
MESSAGES_EACH = 25
PADDING = "x" * 1_000_000  # a long write widens the window a reader can land in


def _connection(folder) -> Connection:
    options = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "control_folder": str(folder / "control"),
        "polling_interval": 0,  # the consumer lists the folder as fast as it can
    }
    return Connection(transport=Transport, transport_options=options)


def _publish(folder, publisher: int, start):
    start.wait()
    with _connection(folder) as connection:
        queue = connection.SimpleQueue("race")
        for number in range(MESSAGES_EACH):
            queue.put({"publisher": publisher, "number": number, "padding": PADDING})


@pytest.fixture
def broker_folder(tmp_path):
    with _connection(tmp_path) as connection:
        for folder in folders(connection.transport_options):
            (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    return tmp_path


def test_every_message_published_concurrently_is_consumed_whole(broker_folder):
    context = multiprocessing.get_context(START_METHOD)
    start = context.Event()
    publishers = [
        context.Process(target=_publish, args=(broker_folder, publisher, start))
        for publisher in range(PUBLISHERS)
    ]
    for process in publishers:
        process.start()
    received = []
    with _connection(broker_folder) as connection:
        queue = connection.SimpleQueue("race")
        start.set()
        while len(received) < PUBLISHERS * MESSAGES_EACH:
            message = queue.get(timeout=10)
            received.append((message.payload["publisher"], message.payload["number"]))
            message.ack()
    for process in publishers:
        process.join(10)
        assert process.exitcode == 0
    assert sorted(received) == [(p, n) for p in range(PUBLISHERS) for n in range(MESSAGES_EACH)]


BINDERS = 4
EXCHANGES = 100


def _bind_to_every_exchange(folder, queue: str, start):
    start.wait()
    with _connection(folder) as connection:
        channel = connection.default_channel
        channel.queue_declare(queue)
        for number in range(EXCHANGES):
            channel.exchange_declare(f"exchange-{number}", type="direct")
            channel.queue_bind(queue, f"exchange-{number}", routing_key=queue)


def test_every_binding_made_concurrently_is_kept(broker_folder):
    """Processes starting together bind their queues to the same new exchanges (a worker's
    queue, the pidbox): no table comes out empty, torn or missing a binding."""
    context = multiprocessing.get_context(START_METHOD)
    start = context.Event()
    queues = [f"queue-{number}" for number in range(BINDERS)]
    binders = [
        context.Process(target=_bind_to_every_exchange, args=(broker_folder, queue, start))
        for queue in queues
    ]
    for process in binders:
        process.start()
    start.set()
    for process in binders:
        process.join(30)
        assert process.exitcode == 0
    with _connection(broker_folder) as connection:
        tables = [connection.default_channel.get_table(f"exchange-{n}") for n in range(EXCHANGES)]
    assert [sorted(entry.queue for entry in table) for table in tables] == [queues] * EXCHANGES
