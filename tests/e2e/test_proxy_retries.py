"""deploy/haproxy.cfg tries a GET again on the other node when its connection closed with no
answer, and never replays another method (docs/production.md "The proxy"). A node that stops
closes its listener, which resets the connections still queued on it: tests/e2e/test_fleet.py
once saw a 502 for a GET sent through the proxy as a node was SIGTERMed. Here one node is a
stand-in that reads each request and closes the connection without a word."""

import pytest

from tests.e2e.standins import Pool, get

SENT = 10  # the nodes take turns (roundrobin): half of them reach the closing node first


def close_without_answering(headers: dict):
    raise ConnectionAbortedError("the stand-in closes the connection unanswered")


@pytest.fixture
def nodes():
    closing, answering = Pool("closing", close_without_answering), Pool("answering")
    yield closing, answering
    closing.stop()
    answering.stop()


def test_a_get_is_tried_again_on_the_other_node(nodes, proxy_for):
    closing, answering = nodes
    port = proxy_for(closing, None, answering).port
    answers = [get(port, None) for _ in range(SENT)]
    assert [(status, body) for status, _, body in answers] == [(200, "answering")] * SENT
    assert closing.served >= SENT // 2 - 1


def test_a_post_is_not_replayed(nodes, proxy_for):
    closing, answering = nodes
    port = proxy_for(closing, None, answering).port
    served_before = answering.served
    statuses = [get(port, None, body=b"{}")[0] for _ in range(SENT)]
    assert set(statuses) == {200, 502}
    # Each 502 reached the closing node alone; the other node saw only its own 200s.
    assert answering.served - served_before == statuses.count(200)
    assert closing.served >= statuses.count(502)
