"""scripts/webhook_receiver.py, the development receiver (README "When the receiver died"):
run as a developer runs it, against a live server, and killed; started again for the same
endpoint it keeps the secret, listens where it did, appends to its log, and the events that
failed meanwhile arrive at once. Deliveries are driven in the test process, as the workers
drive them."""

import os
import re
import signal
import socket
import subprocess
import sys

import pytest
import requests
from django.db import transaction

from events.services import emit
from tests.e2e.processes import ROOT, wait_for
from tests.webhooks.conftest import LOOPBACK, payment_object
from webhooks.attempts import deliveries_drain
from webhooks.models import Delivery, WebhookEndpoint

pytestmark = pytest.mark.django_db(transaction=True)
SCRIPT = ROOT / "scripts" / "webhook_receiver.py"
DRAIN = 120  # seconds a drain may go on: a budget on a loaded machine, not an assertion


@pytest.fixture
def receiver_var(tmp_path, settings):
    """The script's var/ in a scratch directory, its certificate trusted by the delivery."""
    run_script(tmp_path, "--certificate")
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    settings.WEBHOOK_CA_BUNDLE = str(tmp_path / "webhook-receiver" / "ca.pem")
    pids = []
    yield tmp_path, pids
    for pid in pids:
        os.kill(pid, signal.SIGTERM)


def run_script(var, *args, key: str = "") -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env={**os.environ, "RECEIVER_VAR": str(var), "KEY": key},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def start(receiver_var, api: str, key: str, *args) -> tuple[str, str, int]:
    """-> (endpoint id, secret, port) the receiver printed; its pid is killed at the end."""
    var, pids = receiver_var
    printed = run_script(var, "--api", api, *args, key=key)
    found = re.search(r"endpoint (whe_\w+) at https://localhost:(\d+)/hooks, secret (\S+)", printed)
    pids.append(int(re.search(r"receiver pid (\d+)", printed).group(1)))
    return found.group(1), found.group(3), int(found.group(2))


def stop(receiver_var, port: int) -> None:
    """Kill the receiver and wait until its port refuses connections (it is not our child)."""
    os.kill(receiver_var[1].pop(), signal.SIGTERM)
    wait_for(lambda: refused(port))


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    except OSError:  # reset by the process as it dies: not closed yet, ask again
        return False
    return False


def deliver(merchant, payment_id: str) -> Delivery:
    with transaction.atomic():
        event = emit(
            merchant=merchant,
            livemode=False,
            type="payment.created",
            obj=payment_object(payment_id),
        )
    deliveries_drain(livemode=False, seconds=DRAIN)
    return Delivery.objects.get(event=event)


def logged(var) -> list[str]:
    return (var / "webhooks.log").read_text().splitlines()


def test_a_killed_receiver_comes_back_on_its_endpoint_and_gets_what_it_missed(
    receiver_var, live_server, new_merchant
):
    var, _ = receiver_var
    api, key = f"{live_server.url}/v1", new_merchant.keys["test"]["secret"].secret
    merchant = new_merchant.merchant
    endpoint_id, secret, port = start(receiver_var, api, key)
    first = deliver(merchant, "pay_01J0000000000000000000000A")
    assert first.status == "delivered"
    assert logged(var)[0].endswith("signature verified")

    stop(receiver_var, port)
    missed = deliver(merchant, "pay_01J0000000000000000000000B")
    assert missed.status == "pending" and missed.attempt_count == 1  # refused: retried later

    again = start(receiver_var, api, key, "--endpoint", endpoint_id)
    assert again == (endpoint_id, secret, port)  # the same secret, on the same port
    deliveries_drain(livemode=False, seconds=DRAIN)  # recover made the missed one due now
    missed.refresh_from_db()
    assert missed.status == "delivered"
    lines = logged(var)
    assert len(lines) == 2 and all(line.endswith("signature verified") for line in lines)

    # Somewhere else: the endpoint follows the receiver to its new port.
    stop(receiver_var, port)
    moved = start(receiver_var, api, key, "--endpoint", endpoint_id, "--port", "0")
    assert moved[2] != port
    assert WebhookEndpoint.objects.get(pk=endpoint_id).url == f"https://localhost:{moved[2]}/hooks"
    assert deliver(merchant, "pay_01J0000000000000000000000C").status == "delivered"
    assert len(logged(var)) == 3


def test_what_is_not_an_event_is_answered_400_and_not_kept(receiver_var, live_server, new_merchant):
    """The receiver keeps an event before it acknowledges it (a delivery marked delivered is
    in its log already); a body that is no event is refused, not left unanswered."""
    var, _ = receiver_var
    api, key = f"{live_server.url}/v1", new_merchant.keys["test"]["secret"].secret
    _, _, port = start(receiver_var, api, key)
    answer = requests.post(
        f"https://localhost:{port}/hooks",
        data=b"not json",
        headers={"Service-Signature": "t=1,v1=00"},
        verify=var / "webhook-receiver" / "ca.pem",
        timeout=30,
    )
    assert answer.status_code == 400
    assert not (var / "webhooks.log").exists() or logged(var) == []
