"""A shop's whole integration in Python, typed only by the client openapi-python-client generated
from the served /openapi.json (`make python-client`, which checks this file with mypy --strict;
tests/e2e/test_generated_client.py runs it). Each answer is narrowed to the generated model of
its status with isinstance: no hand-written API types, no casts.
Environment: SVC_BASE_URL, SVC_SECRET_KEY, SVC_RECEIVER_URL (an https webhook receiver).
Prints one JSON line, {"ok": true, "seen": [...]}, when every check passed."""

import json
import os
import uuid

from svc_client import AuthenticatedClient
from svc_client.api.events import events_feed, events_list, events_retrieve
from svc_client.api.payments import (
    payments_captures_create,
    payments_create,
    payments_list,
    payments_refunds_create,
)
from svc_client.api.refunds import refunds_retrieve
from svc_client.api.sandbox import sandbox_simulate_webhook_create, sandbox_tokens_create
from svc_client.api.webhook_endpoints import webhook_endpoints_create
from svc_client.models import (
    CaptureInput,
    CaptureMethod,
    Error,
    ErrorType,
    EventFeed,
    EventList,
    EventType,
    FeedEntry,
    Payment,
    PaymentCard,
    PaymentCreateInput,
    PaymentCreateInputMetadata,
    PaymentEvent,
    PaymentEventWithAttempts,
    PaymentFees,
    PaymentList,
    PaymentMethodInput,
    PaymentStatus,
    Refund,
    RefundCreateInput,
    RefundEvent,
    SimulateInput,
    Token,
    TokenInput,
    WebhookAttemptStatus,
    WebhookEndpointInput,
    WebhookEndpointWithSecret,
)
from svc_client.types import UNSET, Unset

APPROVED, DECLINED = "4242424242424242", "4000000000000002"


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise SystemExit(f"{name} is not set")
    return value


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"check failed: {what}")


client = AuthenticatedClient(base_url=env("SVC_BASE_URL"), token=env("SVC_SECRET_KEY"))
seen: list[str] = []


def key() -> str:
    return str(uuid.uuid4())


def token(number: str = APPROVED) -> Token:
    card = TokenInput(number=number, exp_month=12, exp_year=2099, cvc="123")
    created = sandbox_tokens_create.sync(client=client, body=card)
    if not isinstance(created, Token):
        raise SystemExit(f"token: {created}")
    return created


def payment_body(
    number: str = APPROVED,
    *,
    amount: int = 2500,
    capture_method: CaptureMethod = CaptureMethod.AUTOMATIC,
    metadata: PaymentCreateInputMetadata | Unset = UNSET,
) -> PaymentCreateInput:
    return PaymentCreateInput(
        amount=amount,
        currency="eur",
        reference="py-order",
        capture_method=capture_method,
        payment_method=PaymentMethodInput(type_="card", token=token(number).id),
        metadata=metadata,
    )


def pay(body: PaymentCreateInput, idempotency_key: str | None = None) -> Payment | Error | None:
    return payments_create.sync(client=client, idempotency_key=idempotency_key or key(), body=body)


def paid(payment: Payment | Error | None, what: str) -> Payment:
    if not isinstance(payment, Payment):
        raise SystemExit(f"{what}: {payment}")
    return payment


def refused(answer: Payment | Error | None, what: str) -> Error:
    if not isinstance(answer, Error):
        raise SystemExit(f"{what}: expected the error envelope, got {answer}")
    return answer


# An automatic payment: captured at once, its card and fees typed.
automatic = paid(pay(payment_body()), "automatic payment")
check(automatic.status == PaymentStatus.CAPTURED, "captured at once")
check(automatic.outcome.decline_is_soft is None, "an approval has no decline_is_soft")
check(automatic.outcome.response_code == "00", "approved")
card = automatic.method.card
check(isinstance(card, PaymentCard) and card.last4 == "4242", "method.card")
fees = automatic.fees
check(isinstance(fees, PaymentFees) and fees.breakdown.mdr >= 0, "fees at capture")
seen.append(f"automatic {automatic.id} {automatic.status}")

# A manual payment, captured in part, then refunded in part.
manual = paid(pay(payment_body(amount=4000, capture_method=CaptureMethod.MANUAL)), "manual payment")
check(manual.status == PaymentStatus.AUTHORIZED, "authorized")
captured = paid(
    payments_captures_create.sync(
        manual.id, client=client, body=CaptureInput(amount=2000), idempotency_key=key()
    ),
    "partial capture",
)
check((captured.amount_captured, captured.amount) == (2000, 4000), "partial capture")
refund = payments_refunds_create.sync(
    manual.id, client=client, body=RefundCreateInput(amount=500), idempotency_key=key()
)
if not isinstance(refund, Refund):
    raise SystemExit(f"refund: {refund}")
check((refund.payment, refund.amount) == (manual.id, 500), "refund")
check(isinstance(refunds_retrieve.sync(refund.id, client=client), Refund), "refund read")
seen.append(f"manual {manual.id} captured 2000, refund {refund.status}")

# Filtered and paged lists.
first = payments_list.sync(client=client, amountgte=2000, currency="eur", limit=1)
if not isinstance(first, PaymentList) or not isinstance(first.next_cursor, str):
    raise SystemExit(f"first page: {first}")
second = payments_list.sync(
    client=client, amountgte=2000, currency="eur", limit=1, starting_after=first.next_cursor
)
if not isinstance(second, PaymentList):
    raise SystemExit(f"second page: {second}")
listed = {payment.id for payment in first.data + second.data}
check(first.has_more and listed == {automatic.id, manual.id}, "two pages")
seen.append(f"listed {len(listed)} payments over 2 pages")

# A webhook endpoint, and a simulated webhook delivered to it.
endpoint = webhook_endpoints_create.sync(
    client=client,
    body=WebhookEndpointInput(url=env("SVC_RECEIVER_URL"), enabled_events=["payment.*"]),
    idempotency_key=key(),
)
if not isinstance(endpoint, WebhookEndpointWithSecret):
    raise SystemExit(f"webhook endpoint: {endpoint}")
simulated = sandbox_simulate_webhook_create.sync(
    client=client,
    body=SimulateInput(
        type_=EventType.PAYMENT_CAPTURED, endpoint=endpoint.id, resource=automatic.id
    ),
    idempotency_key=key(),
)
if not isinstance(simulated, PaymentEventWithAttempts):
    raise SystemExit(f"simulate-webhook: {simulated}")
check(simulated.data.object_.id == automatic.id, "the simulated event's payment")
check(
    [a.status for a in simulated.attempts] == [WebhookAttemptStatus.DELIVERED],
    "delivered to the receiver",
)
detail = events_retrieve.sync(simulated.id, client=client)
check(isinstance(detail, PaymentEventWithAttempts) and len(detail.attempts) == 1, "attempts")
seen.append(f"webhook {simulated.type_} delivered")

# Events: a PaymentEvent's data.object is a Payment, a RefundEvent's a Refund.
events = events_list.sync(client=client, limit=100)
if not isinstance(events, EventList):
    raise SystemExit(f"events: {events}")
payment_events = [e for e in events.data if isinstance(e, PaymentEvent)]
refund_events = [e for e in events.data if isinstance(e, RefundEvent)]
check(all(isinstance(e.data.object_, Payment) for e in payment_events), "payment events")
check(bool(refund_events), "a refund event")
check(all(isinstance(e.data.object_, Refund) for e in refund_events), "refund events")
seen.append(f"events: {len(payment_events)} payment, {len(refund_events)} refund")

# The event feed, followed by its cursors until it holds every event listed (it shows an event
# once the older transactions of the server, other sessions' too, have ended).
fed: list[FeedEntry] = []
after: str | Unset = UNSET
while not {e.id for e in events.data} <= {entry.event.id for entry in fed}:
    page = events_feed.sync(client=client, after=after, limit=100, wait=1)
    if not isinstance(page, EventFeed):
        raise SystemExit(f"feed: {page}")
    fed += page.data
    after = page.next_cursor
check(all(isinstance(entry.event, PaymentEvent | RefundEvent) for entry in fed), "feed entries")
seen.append(f"feed: {len(fed)} events")

# A decline: 402 and the envelope, its decline code and the declined payment's id as fields.
declined = refused(pay(payment_body(DECLINED)), "a decline").error
check(declined.type_ == ErrorType.CARD_ERROR, "card_error")
check(declined.decline_code == "generic_decline", "decline_code")
check(isinstance(declined.payment, str) and declined.payment.startswith("pay_"), "payment id")
seen.append(f"decline {declined.decline_code} {declined.payment}")

# A sandbox 5xx: the envelope, api_error, safe to retry with the same key (not replayed).
failing = payment_body(metadata=PaymentCreateInputMetadata.from_dict({"_svc_test_http_error": 503}))
same_key = key()
unavailable = refused(pay(failing, same_key), "a 503").error
check(unavailable.type_ == ErrorType.API_ERROR, "api_error")
retried = refused(pay(failing, same_key), "the retry").error
check(retried.request_id != unavailable.request_id, "a 5xx is not replayed")
seen.append(f"5xx {unavailable.code}")

print(json.dumps({"ok": True, "seen": seen}))
