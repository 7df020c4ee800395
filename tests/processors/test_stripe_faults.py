"""Stripe unreachable, answering 500 after it acted, and hanging past our deadline: the
merchant gets the spec's 5xx `connector_http_error`, the operation stays in doubt (never
abandoned: Stripe may have acted), and once Stripe answers again, a retry with the same
Idempotency-Key or beat's recovery finishes it with exactly one PaymentIntent per payment,
counted on the emulator."""

import datetime

import pytest
import time_machine
from django.utils import timezone

from payments.models import Operation, Payment
from payments.tasks import recover_operations
from tests.fault_proxy import FaultProxy
from tests.processors.conftest import SECRET_KEY, live_token
from tests.processors.test_stripe_connector import create, intents
from tests.support.http_faults import FaultyProcessorProxy

pytestmark = pytest.mark.django_db(transaction=True)


def through(account, url: str) -> None:
    account.api_base = url
    account.save()


@pytest.fixture
def tcp_faults(localstripe, stripe_account):
    host, port = localstripe.url.removeprefix("http://").split(":")
    proxy = FaultProxy((host, int(port)))
    through(stripe_account, f"http://127.0.0.1:{proxy.port}")
    yield proxy
    proxy.close()


@pytest.fixture
def faulty(localstripe, stripe_account):
    """Stripe through an HTTP proxy that answers 500 after it acted, or 429 (its options)."""
    proxy = FaultyProcessorProxy(localstripe.url)
    through(stripe_account, proxy.url)
    yield proxy
    proxy.close()


def post(live_api, path: str, body: dict, key: str):
    return live_api.post(path, body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def assert_in_doubt(answer) -> None:
    assert answer.status_code == 502, answer.json()
    assert answer.json()["error"]["code"] == "connector_http_error"
    [operation] = Operation.objects.all()
    assert operation.state == Operation.State.STARTED  # asked again later, never abandoned


def test_unreachable_stripe_then_the_retry_charges_once(
    live_api, merchant, stripe_account, tcp_faults, localstripe
):
    token = live_token(stripe_account, merchant)
    tcp_faults.cut()  # Stripe gone: open connections cut, new ones refused
    tcp_faults.set_mode("refuse")

    assert_in_doubt(create(live_api, token, "order-1"))

    tcp_faults.set_mode("pass")
    retried = create(live_api, token, "order-1")
    assert retried.status_code == 201, retried.json()
    assert retried.json()["status"] == "captured"
    assert len(intents(localstripe)) == 1


def test_a_create_delivered_after_our_deadline_is_never_charged(
    live_api, merchant, stripe_account, tcp_faults, localstripe, settings
):
    """The hung request reaches Stripe late, after we gave up on it. Stripe itself would
    answer our retry's create with the same PaymentIntent (same Idempotency-Key); the emulator
    ignores Idempotency-Key and makes a second one. Only the linked one is ever confirmed:
    one charge, and the late one is left unconfirmed (no money moves on it)."""
    settings.STRIPE_TIMEOUT_SECONDS = 1
    token = live_token(stripe_account, merchant)
    tcp_faults.set_mode("hang")
    assert_in_doubt(create(live_api, token, "order-3"))

    tcp_faults.set_mode("pass")  # the held bytes flow on: the late create arrives
    retried = create(live_api, token, "order-3")

    assert retried.status_code == 201, retried.json()
    statuses = sorted(intent["status"] for intent in intents(localstripe))
    assert statuses.count("succeeded") == 1
    assert set(statuses) <= {"succeeded", "requires_confirmation"}


def test_a_500_after_stripe_charged_is_recovered_by_beat_with_one_intent(
    live_api, merchant, stripe_account, localstripe, faulty
):
    faulty.fail_after = r"POST /v1/payment_intents/\w+/confirm"
    token = live_token(stripe_account, merchant)

    assert_in_doubt(create(live_api, token, "order-4"))
    assert faulty.failed == 1
    [charged] = intents(localstripe)
    assert charged["status"] == "succeeded"  # Stripe acted; we did not hear it

    faulty.fail_after = None
    with time_machine.travel(timezone.now() + datetime.timedelta(minutes=5)):
        recover_operations()

    payment = Payment.objects.get(merchant=merchant, reference="order-4")
    assert payment.status == "captured" and payment.amount_captured == 2599
    assert Operation.objects.get().state == Operation.State.APPLIED
    assert [i["id"] for i in localstripe.list("payment_intents", SECRET_KEY)] == [charged["id"]]


def test_a_capture_stripe_made_unheard_is_finished_by_the_retry(
    live_api, merchant, stripe_account, localstripe, faulty
):
    token = live_token(stripe_account, merchant)
    payment = create(live_api, token, "order-5", capture_method="manual").json()
    faulty.fail_after = r"POST /v1/payment_intents/\w+/capture"
    path = f"/v1/payments/{payment['id']}/captures"

    first = post(live_api, path, {"amount": 1000}, "capture-5")
    assert first.status_code == 502, first.json()
    assert Operation.objects.filter(state=Operation.State.STARTED).count() == 1
    faulty.fail_after = None

    retried = post(live_api, path, {"amount": 1000}, "capture-5")

    assert retried.status_code == 200, retried.json()
    assert retried.json()["status"] == "captured" and retried.json()["amount_captured"] == 1000
    [charge] = localstripe.list("charges", SECRET_KEY)
    assert charge["amount"] - charge["amount_refunded"] == 1000


def test_a_refund_stripe_made_unheard_is_not_made_twice(
    live_api, merchant, stripe_account, localstripe, faulty
):
    payment = create(live_api, live_token(stripe_account, merchant), "order-6").json()
    faulty.fail_after = r"POST /v1/refunds"
    path = f"/v1/payments/{payment['id']}/refunds"

    assert post(live_api, path, {"amount": 599}, "refund-6").status_code == 502
    faulty.fail_after = None

    retried = post(live_api, path, {"amount": 599}, "refund-6")

    assert retried.status_code == 201, retried.json()
    assert retried.json()["status"] == "succeeded"
    [made] = localstripe.list("refunds", SECRET_KEY)
    assert made["amount"] == 599


@pytest.mark.parametrize(("limited", "status"), [(2, 201), (3, 502)])
def test_stripes_rate_limit_is_retried_within_the_call(
    live_api, merchant, stripe_account, localstripe, faulty, limited, status
):
    """Two 429s are retried with backoff (STRIPE_RATE_LIMIT_RETRIES=2); after a third the
    merchant gets 502 and its token back (Stripe did not act: nothing in doubt)."""
    token = live_token(stripe_account, merchant)
    faulty.limit, faulty.limited = r"POST /v1/payment_intents$", limited

    answer = create(live_api, token, "order-7")

    assert answer.status_code == status, answer.json()
    assert len(intents(localstripe)) == (1 if status == 201 else 0)
    token.refresh_from_db()
    assert (token.used_at is None) == (status == 502)
