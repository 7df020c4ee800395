"""Injected delivery faults of test mode (docs/sandbox.md "Failure profiles", webhook side):
the interface through which the fan-out asks what a merchant's failure profile does to its
test deliveries. `webhooks` may not import `sandbox` (it sits above), so the setting
WEBHOOK_TEST_FAULTS names the function that answers, as PAYMENT_CONNECTORS names the
simulator; empty, nothing is injected. Live deliveries never ask."""

import datetime
from dataclasses import dataclass

from django.conf import settings
from django.utils.module_loading import import_string

from webhooks.models import Delivery


@dataclass(frozen=True)
class Fault:
    kind: str  # a Delivery.Injected
    delay: datetime.timedelta = datetime.timedelta(0)


def test_faults(merchant_id: str, count: int, revision: int | None = None) -> list[Fault | None]:
    """The faults of the merchant's next `count` test deliveries, one each (None: sent as is).
    `revision`: the configuration revision the fan-out read (infra.revision), if any."""
    hook = settings.WEBHOOK_TEST_FAULTS
    if not hook or not count:
        return [None] * count
    return import_string(hook)(merchant_id=merchant_id, count=count, revision=revision)


def fault_apply(delivery: Delivery, fault: Fault | None, now: datetime.datetime) -> None:
    """Mark the new delivery with its fault; a delayed one is first due later (no worker waits
    for it: the beat tick nudges it once due)."""
    if fault is None:
        return
    delivery.injected = fault.kind
    delivery.next_attempt_at = now + fault.delay
