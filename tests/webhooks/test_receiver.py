"""The test receiver itself (tests/webhooks/receiver.py) records what a real server would hand
its application: the forwarding CLI's test kills its sender mid-request, and a body cut short
by that kill had been recorded as a request, whose signature then failed to verify."""

import socket
import ssl

import pytest


def send_raw(receiver, webhook_ca, data: bytes) -> None:
    """`data` on one TLS connection to the receiver, which is then closed (as by a killed
    client)."""
    context = ssl.create_default_context()
    webhook_ca.configure_trust(context)
    with socket.create_connection(("127.0.0.1", receiver.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            tls.sendall(data)


@pytest.mark.parametrize("sent, recorded", [(10, []), (20, [b"0123456789" * 2])])
def test_a_body_cut_short_by_a_dying_client_is_not_recorded(receiver, webhook_ca, sent, recorded):
    head = b"POST /hooks HTTP/1.1\r\nHost: localhost\r\nContent-Length: 20\r\n\r\n"
    send_raw(receiver, webhook_ca, head + (b"0123456789" * 2)[:sent])
    receiver.settle()
    assert [request.body for request in receiver.requests] == recorded
