"""An event commits either before an endpoint change or fanned out with it (docs/webhooks.md
"Fan-out"): the fan-out takes its merchant's row FOR KEY SHARE, an endpoint change FOR UPDATE
(webhooks/migrations/0005). Each side runs in a thread on a connection of its own and holds
its transaction open until the test lets it commit; that the other side waits is read from
pg_stat_activity, not timed."""

import threading

import pytest
from django.db import connection, transaction

from events.services import emit
from tests.e2e.processes import wait_for
from tests.webhooks.conftest import payment_object
from webhooks.models import Delivery, WebhookEndpoint
from webhooks.services import endpoint_create, endpoint_delete

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

URL = "https://93.184.215.14/hooks"


class Held(threading.Thread):
    """Runs `work` in a transaction on its own connection, then holds the transaction open
    until `commit()`; `.result` is what `work` returned."""

    def __init__(self, work):
        super().__init__(daemon=True)
        self.work, self.result, self.error = work, None, None
        self.done, self.release = threading.Event(), threading.Event()

    def run(self):
        try:
            with transaction.atomic():
                self.result = self.work()
                self.done.set()
                assert self.release.wait(30)
        except Exception as error:  # noqa: BLE001  (reported by the test, in its thread)
            self.error = error
        finally:
            self.done.set()
            connection.close()

    def commit(self):
        self.release.set()
        self.join(30)
        assert self.error is None, self.error


def waiting_on_a_lock() -> int:
    """Backends of this database waiting for a row lock held by another transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def emitting(merchant):
    return lambda: emit(
        merchant=merchant, livemode=False, type="payment.captured", obj=payment_object()
    )


def creating(merchant):
    return lambda: endpoint_create(merchant=merchant, livemode=False, url=URL).endpoint


def test_an_event_written_while_an_endpoint_is_created_waits_and_is_fanned_out_to_it(merchant):
    change = Held(creating(merchant))
    change.start()
    assert change.done.wait(30) and change.error is None
    event = Held(emitting(merchant))
    event.start()
    wait_for(lambda: waiting_on_a_lock() == 1)  # the fan-out waits for the change's commit
    assert not event.done.is_set()
    change.commit()
    event.commit()
    assert Delivery.objects.filter(event=event.result, endpoint=change.result).exists()


def test_an_endpoint_created_while_an_event_is_written_waits_for_its_commit(merchant):
    """Else the event, fanned out without the endpoint, would commit after it."""
    event = Held(emitting(merchant))
    event.start()
    assert event.done.wait(30) and event.error is None
    change = Held(creating(merchant))
    change.start()
    wait_for(lambda: waiting_on_a_lock() == 1)
    assert not change.done.is_set()
    event.commit()
    change.commit()
    assert not Delivery.objects.filter(event=event.result).exists()  # it committed first
    assert WebhookEndpoint.objects.filter(pk=change.result.pk).exists()


def test_an_endpoint_deleted_while_an_event_is_written_cancels_its_delivery(merchant):
    """The delete waits for the event's commit, then cancels the delivery the event wrote."""
    endpoint = endpoint_create(merchant=merchant, livemode=False, url=URL).endpoint
    event = Held(emitting(merchant))
    event.start()
    assert event.done.wait(30) and event.error is None
    change = Held(lambda: endpoint_delete(endpoint=endpoint))
    change.start()
    wait_for(lambda: waiting_on_a_lock() == 1)
    event.commit()
    change.commit()
    delivery = Delivery.objects.get(event=event.result, endpoint=endpoint)
    assert delivery.status == Delivery.Status.CANCELED
