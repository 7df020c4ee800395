"""Webhook fixtures: a real HTTPS receiver on loopback trusted through WEBHOOK_CA_BUNDLE, with
WEBHOOK_ALLOWED_NETWORKS letting loopback through the URL guard (https stays required)."""

import ipaddress

import pytest
import trustme
from django.db import transaction

from config.celery import app
from events.services import emit
from tests.e2e.processes import celery_worker
from tests.webhooks.receiver import Receiver
from webhooks import tasks
from webhooks.services import endpoint_create

LOOPBACK = [ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128")]


@pytest.fixture(scope="session")
def webhook_ca():
    return trustme.CA()


@pytest.fixture(scope="session")
def ca_bundle(webhook_ca, tmp_path_factory):
    path = tmp_path_factory.mktemp("ca") / "webhook-ca.pem"
    webhook_ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.fixture
def loopback_allowed(settings, ca_bundle):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    settings.WEBHOOK_CA_BUNDLE = ca_bundle


@pytest.fixture
def receiver(webhook_ca, loopback_allowed):
    server = Receiver(webhook_ca)
    yield server
    server.close()


@pytest.fixture
def endpoint_for(merchant):
    """endpoint_for(receiver, enabled_events=[...], livemode=False) -> (endpoint, secret), each
    at a URL of its own on the receiver (`Receiver.next_url`)."""

    def make(receiver, *, livemode=False, **kwargs):
        url = receiver.next_url()
        created = endpoint_create(merchant=merchant, livemode=livemode, url=url, **kwargs)
        return created.endpoint, created.secret

    return make


def payment_object(payment_id="pay_01J0000000000000000000000A", status="captured"):
    return {"id": payment_id, "object": "payment", "status": status, "amount": 1000}


@pytest.fixture
def emit_event(merchant):
    """Writes an event as a service would, but without its fan-out (the test drives it, as the
    sweeper would), unless `hooks=True`."""

    def make(type="payment.captured", obj=None, *, livemode=False, hooks=False):
        with transaction.atomic():
            return emit(
                merchant=merchant,
                livemode=livemode,
                type=type,
                obj=obj or payment_object(),
                previous_attributes={"status": "authorized"},
                fan_out=hooks,
            )

    return make


# Both pools' queues: the e2e tests' events are test-mode ones.
QUEUES = tuple(tasks.QUEUES.values())


def purge_webhooks_queue() -> None:
    with app.connection_for_write() as conn:
        for queue in QUEUES:
            conn.default_channel.queue_purge(queue)


@pytest.fixture
def worker(loopback_allowed, ca_bundle):
    """A real Celery worker process on both queues (tests/e2e/processes.celery_worker)."""
    purge_webhooks_queue()
    with celery_worker(
        *QUEUES, WEBHOOK_ALLOWED_NETWORKS="127.0.0.0/8", WEBHOOK_CA_BUNDLE=ca_bundle
    ) as process:
        yield process
