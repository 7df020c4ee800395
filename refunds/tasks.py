"""Beat task: settle pending refunds whose time has come (docs/refunds.md "Pending refunds").

Safe to run twice or concurrently: the service re-checks each refund under the payment's row
lock, so a refund settled meanwhile is left alone.
"""

import logging

from celery import shared_task

from api.errors import ServiceError
from payments.models import Operation
from payments.operations import operations_recover
from refunds import selectors, services

BATCH_SIZE = 500  # the next tick, 10 s later, takes the rest

log = logging.getLogger(__name__)


@shared_task
def resolve_due_refunds() -> int:
    due = list(selectors.due_refunds(limit=BATCH_SIZE))
    for refund in due:
        try:
            services.refund_resolve(refund=refund)
        except ServiceError as exc:
            # One refund the connector cannot serve must not stop the others; it is asked
            # again after a wait that doubles with its age, not on every tick.
            log.error("could not settle %s: %s (%s)", refund.pk, exc.message, exc.code)
            services.refund_ask_again_later(refund)
    return len(due)


@shared_task
def recover_refund_operations() -> int:
    """Refund operations left `started` by a process that died: asked again, and applied."""
    kinds = (Operation.Kind.REFUND, Operation.Kind.RESOLVE_REFUND)
    return operations_recover(kinds, services.refund_operation_recover)
