"""Kept-alive connections (webhooks/transport.py): reused per target, never after a failure."""

from tests.webhooks.receiver import Receiver, Reply
from webhooks import transport
from webhooks.urlguard import check_url


def post(url: str) -> transport.Outcome:
    return transport.post(check_url(url), b"{}", {"Content-Type": "application/json"})


def peers(receiver) -> list:
    return [request.peer for request in receiver.requests]


def test_deliveries_to_one_receiver_share_one_connection(receiver):
    assert post(receiver.url()).delivered and post(receiver.url("/other")).delivered
    first, second = peers(receiver)
    assert first == second


def test_a_connection_the_receiver_closed_is_not_reused(receiver):
    receiver.reply = Reply(headers={"Connection": "close"})
    assert post(receiver.url()).delivered
    receiver.reply = Reply()
    assert post(receiver.url()).delivered  # a new connection, no failed attempt
    first, second = peers(receiver)
    assert first != second


def test_a_body_read_only_in_part_closes_the_connection(receiver):
    receiver.reply = Reply(body=b"x" * (transport.MAX_STORED_BODY * 4))
    assert len(post(receiver.url()).response_body) == transport.MAX_STORED_BODY
    receiver.reply = Reply()
    assert post(receiver.url()).response_body == "ok"  # not the rest of the previous body
    first, second = peers(receiver)
    assert first != second


def test_a_connection_is_reused_only_for_the_host_it_was_verified_for(webhook_ca, loopback_allowed):
    receiver = Receiver(webhook_ca, hostnames=("localhost", "127.0.0.1"))
    try:
        assert post(receiver.url(host="localhost")).delivered
        assert post(receiver.url(host="127.0.0.1")).delivered  # same address, other name
        by_name, by_address = receiver.requests
        assert by_name.peer != by_address.peer
        assert by_address.headers["Host"] == f"127.0.0.1:{receiver.port}"
    finally:
        receiver.close()


def test_a_receiver_dripping_its_answer_is_cut_off_at_the_attempts_deadline(receiver, monkeypatch):
    # Each byte comes well within a read timeout; the whole answer would take 2 s.
    monkeypatch.setattr(transport, "TIMEOUT_SECONDS", 0.3)
    receiver.reply = Reply(body=b"x" * 20, drip=0.05)
    outcome = post(receiver.url())
    assert (outcome.http_status, outcome.delivered) == (None, False)
    assert outcome.error.startswith("timeout:")
    receiver.reply = Reply()
    assert post(receiver.url()).delivered  # the cut-off connection is not reused
    first, second = peers(receiver)
    assert first != second


def test_refused_and_tls_failures_read_the_same_to_the_merchant(receiver, caplog):
    caplog.set_level("INFO", logger="webhooks.transport")
    # The certificate names only "localhost": by address, TLS fails.
    tls_failed = post(receiver.url(host="127.0.0.1"))
    receiver.close()
    refused = post(receiver.url())
    assert tls_failed.error == refused.error == transport.CONNECTION_FAILED
    assert "127.0.0.1" not in refused.error and "refused" not in refused.error.split("(")[0]
    # The operator's log tells them apart, naming host and address.
    assert "SSLError" in caplog.text and "NewConnectionError" in caplog.text
    assert f"to localhost (127.0.0.1 port {receiver.port}) failed" in caplog.text
