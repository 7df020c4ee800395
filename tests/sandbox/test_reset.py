"""Resetting a merchant's test data (docs/sandbox.md "Reset"): its test rows go, in bounded
batches; keys, live rows and other merchants' rows stay exactly as they were; a second reset
finds nothing; the API, the admin button and manage.py run the same service."""

import json
from io import StringIO

import pytest
from django.contrib.admin.utils import quote
from django.core.management import call_command
from django.forms.models import model_to_dict

from accounts.models import ApiKey
from api.models import IdempotencyRecord
from events.models import Event
from payments.models import Dispute, Operation, Payment, Token
from refunds.models import Refund
from sandbox.models import ChallengeSession
from sandbox.reset import sandbox_reset
from tests.factories import (
    AttemptFactory,
    EventFactory,
    IdempotencyRecordFactory,
    PaymentFactory,
    RefundFactory,
    TokenFactory,
    WebhookEndpointFactory,
)
from webhooks.models import Attempt, Delivery, WebhookEndpoint

pytestmark = pytest.mark.django_db

KEPT_MODELS = (
    Payment,
    Refund,
    Dispute,
    Token,
    Event,
    Delivery,
    Attempt,
    Operation,
    ChallengeSession,
    IdempotencyRecord,
    WebhookEndpoint,
    ApiKey,
)


def sandbox_of(merchant, livemode: bool) -> None:
    """One of everything a reset deletes, in one mode of one merchant."""
    endpoint = WebhookEndpointFactory(merchant=merchant, livemode=livemode)
    refund = RefundFactory(payment__merchant=merchant, payment__livemode=livemode)
    payment = refund.payment
    dispute = Dispute.objects.create(
        merchant=merchant,
        livemode=livemode,
        payment=PaymentFactory(merchant=merchant, livemode=livemode, captured=True),
        amount=1000,
        currency="eur",
        reason="fraudulent",
        status=Dispute.Status.NEEDS_RESPONSE,
    )
    resources = (payment.pk, refund.pk, dispute.pk, dispute.payment_id, "pay_simulated_only")
    for resource_id in resources:  # the last: simulate-webhook's kind, of no payment
        AttemptFactory(
            delivery__endpoint=endpoint,
            delivery__event=EventFactory(
                merchant=merchant, livemode=livemode, resource_id=resource_id
            ),
        )
    Operation.objects.create(payment_id=payment.pk, kind="create", state="applied")
    ChallengeSession.objects.create(payment_id=payment.pk)
    PaymentFactory(merchant=merchant, livemode=livemode, requires_action=True)
    TokenFactory(merchant=merchant, livemode=livemode, used_at=None)  # not used yet
    IdempotencyRecordFactory(
        merchant_id=merchant.pk, livemode=livemode, key_hash=f"{merchant.pk}{livemode}", status=201
    )


def rows_left(merchant) -> dict:
    """The merchant's test-mode rows, by model (as many as are left)."""
    mine = {"merchant": merchant, "livemode": False}
    return {
        "payments": Payment.objects.filter(**mine).count(),
        "refunds": Refund.objects.filter(**mine).count(),
        "disputes": Dispute.objects.filter(**mine).count(),
        "tokens": Token.objects.filter(**mine).count(),
        "events": Event.objects.filter(**mine).count(),
        "deliveries": Delivery.objects.filter(
            event__merchant=merchant, event__livemode=False
        ).count(),
        "attempts": Attempt.objects.filter(event__merchant=merchant, event__livemode=False).count(),
        "operations": Operation.objects.exclude(
            payment_id__in=Payment.objects.exclude(**mine).values("pk")
        ).count(),
        "challenges": ChallengeSession.objects.exclude(
            payment_id__in=Payment.objects.exclude(**mine).values("pk")
        ).count(),
        "idempotency_keys": IdempotencyRecord.objects.filter(
            merchant_id=merchant.pk, livemode=False
        ).count(),
    }


def everything_but(merchant) -> dict:
    """Every row that is not the merchant's test data, field by field: what must not change."""
    return {
        # A key's last use is the reset's own request: every other field must hold.
        (model.__name__, row.pk): model_to_dict(row, exclude=["last_used_at"])
        for model in KEPT_MODELS
        for row in _kept(model, merchant)
    }


def _kept(model, merchant):
    """The rows of `model` that are not the merchant's test data."""
    test = {"merchant": merchant, "livemode": False}
    if model is ApiKey:
        return model.objects.all()  # keys are never test data
    if model in (Delivery, Attempt):
        return model.objects.exclude(event__merchant=merchant, event__livemode=False)
    if model is IdempotencyRecord:
        return model.objects.exclude(merchant_id=merchant.pk, livemode=False)
    if model in (Operation, ChallengeSession):
        return model.objects.filter(payment_id__in=Payment.objects.exclude(**test).values("pk"))
    return model.objects.exclude(**test)


@pytest.fixture
def world(merchant, other_merchant):
    sandbox_of(merchant, livemode=False)
    sandbox_of(merchant, livemode=True)
    sandbox_of(other_merchant, livemode=False)
    kept = everything_but(merchant)
    assert all(rows_left(merchant).values())  # something to delete of every kind
    return kept


def reset(api, body=None):
    return api.post("/v1/sandbox/reset", body or {}, format="json")


def test_reset_deletes_the_test_rows_and_nothing_else(api, merchant, world):
    response = reset(api)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["object"] == "sandbox_reset"
    assert (body["complete"], body["in_flight"]) == (True, 0)
    assert body["deleted"] == {
        "payments": 3,  # the refunded one, the disputed one, the requires_action one
        "refunds": 1,
        "disputes": 1,
        "tokens": 4,  # three payments' tokens and the unused one
        "events": 5,
        "deliveries": 5,
        "attempts": 5,
        "idempotency_keys": 1,
        "webhook_endpoints": 0,
    }
    assert set(rows_left(merchant).values()) == {0}
    # Live rows, another merchant's rows and the keys: every field as it was (the reset's
    # own request left no stored answer: it sent no Idempotency-Key).
    assert everything_but(merchant) == world
    assert WebhookEndpoint.objects.get(merchant=merchant, livemode=False).deleted_at is None


def test_a_second_reset_finds_nothing(api, merchant, world):
    assert reset(api).status_code == 200
    again = reset(api).json()
    assert set(again["deleted"].values()) == {0}
    assert again["complete"] is True
    assert everything_but(merchant) == world


def test_reset_in_batches_ends_as_one_run(merchant, world):
    result = sandbox_reset(merchant=merchant, batch=1)
    assert result.complete and result.deleted["payments"] == 3
    assert set(rows_left(merchant).values()) == {0}
    assert everything_but(merchant) == world


def test_a_run_out_of_time_says_it_is_not_complete(merchant, world):
    left = sandbox_reset(merchant=merchant, seconds=0)  # its time spent before a batch
    assert (left.complete, set(left.deleted.values())) == (False, {0})
    assert sandbox_reset(merchant=merchant).complete  # the next call finishes the work
    assert set(rows_left(merchant).values()) == {0}


def test_reset_deletes_test_endpoints_when_asked(api, merchant, world):
    body = reset(api, {"webhook_endpoints": True}).json()
    assert body["deleted"]["webhook_endpoints"] == 1
    endpoint = WebhookEndpoint.objects.get(merchant=merchant, livemode=False)
    assert endpoint.deleted_at is not None  # as DELETE /v1/webhook_endpoints/:id leaves it
    assert api.get(f"/v1/webhook_endpoints/{endpoint.pk}").status_code == 404
    live = WebhookEndpoint.objects.get(merchant=merchant, livemode=True)
    assert live.deleted_at is None


def test_reset_is_for_test_secret_keys(live_api, publishable_api, merchant, world):
    response = reset(live_api)
    assert (response.status_code, response.json()["error"]["code"]) == (403, "test_mode_required")
    assert reset(publishable_api).status_code in (401, 403)
    assert all(rows_left(merchant).values())  # nothing deleted


def test_reset_refuses_a_bad_body_with_the_envelope(api, merchant, world):
    response = reset(api, {"webhook_endpoints": "maybe"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["type"], error["param"]) == ("validation_error", "webhook_endpoints")
    assert all(rows_left(merchant).values())


def test_the_command_dry_runs_then_resets(merchant, world):
    out = StringIO()
    call_command("reset_test_data", "--merchant", merchant.pk, "--json", stdout=out)
    dry = json.loads(out.getvalue())
    assert dry["dry_run"] is True and dry["would_delete"]["payments"] == 3
    assert all(rows_left(merchant).values())  # a dry run deletes nothing
    out = StringIO()
    call_command("reset_test_data", "--merchant", merchant.pk, "--for-real", "--json", stdout=out)
    done = json.loads(out.getvalue())
    assert (done["complete"], done["deleted"]["payments"]) == (True, 3)
    assert set(rows_left(merchant).values()) == {0}
    assert everything_but(merchant) == world


def test_the_merchant_page_resets_after_confirmation(staff_client, merchant, world):
    url = f"/admin/accounts/merchant/{quote(merchant.pk)}/reset-test-data/"
    page = staff_client.get(f"/admin/accounts/merchant/{quote(merchant.pk)}/change/")
    assert url in page.content.decode()  # the button
    assert staff_client.get(url).status_code == 200  # the confirmation page: nothing yet
    assert all(rows_left(merchant).values())
    response = staff_client.post(url, {})
    assert response.status_code == 302
    assert set(rows_left(merchant).values()) == {0}
    assert everything_but(merchant) == world
