"""Beat tasks: find the payments whose time has come and hand each to its service.

Safe to run twice or concurrently: every service call re-checks the payment under its row
lock, so a payment moved on meanwhile is left alone. Work is taken in batches (oldest deadline
first) so one run never holds a huge result set; a run stops after MAX_BATCHES and the next
tick carries on.
"""

import logging

from celery import shared_task

from api.errors import ServiceError
from payments import selectors, services
from payments.models import Payment
from payments.operations import operations_purge, operations_recover
from payments.states import LIFETIMES, Status
from payments.tokens import tokens_purge_unused

BATCH_SIZE = 200
MAX_BATCHES = 10

log = logging.getLogger(__name__)


def _sweep(statuses: tuple[Status, ...], handle) -> int:
    done = 0
    for _ in range(MAX_BATCHES):
        due = selectors.due_payment_ids(statuses=statuses, limit=BATCH_SIZE)
        for payment in Payment.objects.filter(pk__in=due):
            try:
                handle(payment=payment)
            except ServiceError as exc:
                # One payment the connector cannot serve (e.g. no route any more) must not
                # stop the sweep for every other payment; it stays due and is logged.
                log.error("could not move %s on: %s (%s)", payment.pk, exc.message, exc.code)
        done += len(due)
        if len(due) < BATCH_SIZE:
            break
    return done


def _resolve_or_wait(*, payment: Payment) -> Payment:
    """A processor that cannot be asked now (down, or in doubt) is asked again after the wait
    of a payment still processing, not on every tick; the sweep logs the error."""
    try:
        return services.payment_resolve_if_due(payment=payment)
    except ServiceError:
        services.payment_ask_again_later(payment)
        raise


@shared_task
def resolve_due_payments() -> int:
    """processing past its resolve time -> its settled outcome."""
    return _sweep((Status.PROCESSING,), _resolve_or_wait)


@shared_task
def expire_due_payments() -> int:
    """pending / requires_action after 1 hour, authorized after 7 days -> expired."""
    return _sweep(tuple(LIFETIMES), services.payment_expire)


@shared_task
def recover_operations() -> int:
    """Payment operations left `started` by a process that died: asked again with the same
    key, and applied (docs/payments.md "Connector operations"). Refunds' are refunds.tasks'."""
    return operations_recover(services.TRIGGERS, services.payment_operation_recover)


@shared_task
def purge_unused_tokens() -> int:
    """Beat, hourly: tokens that expired unused over a day ago."""
    return tokens_purge_unused()


@shared_task
def purge_finished_operations() -> int:
    """Beat, hourly: connector operations finished longer than OPERATION_RETENTION_DAYS ago."""
    return operations_purge()
