"""emit(): write an event (and so its outbox record) inside the caller's transaction."""

import logging
from functools import partial

from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string

from accounts.models import Merchant
from events.catalogue import EVENT_TYPES
from events.models import Event

log = logging.getLogger(__name__)


def emit(
    *,
    merchant: Merchant,
    livemode: bool,
    type: str,
    obj: dict,
    previous_attributes: dict | None = None,
    api_version: str | None = None,
) -> Event:
    """Record `type` for the resource `obj` (as the API renders it now).

    Must be called inside the transaction that makes the change, so that any state a client
    can read has already produced its event (spec "States and transitions"). After commit, the
    hooks named in settings.EVENT_DISPATCH_HOOKS are nudged with the ids of the events the
    transaction wrote; a lost nudge is recovered by the webhooks sweeper, since `dispatched_at`
    stays null.
    """
    (event,) = emit_all(
        merchant=merchant,
        livemode=livemode,
        types=[type],
        obj=obj,
        previous_attributes=previous_attributes,
        api_version=api_version,
    )
    return event


def emit_all(
    *,
    merchant: Merchant,
    livemode: bool,
    types: list[str],
    obj: dict,
    previous_attributes: dict | None = None,
    api_version: str | None = None,
) -> list[Event]:
    """emit() for several types about the same state of one resource (a payment created and
    captured in one call), written in one INSERT, in the order given."""
    if unknown := [t for t in types if t not in EVENT_TYPES]:
        raise ValueError(f"unknown event type {unknown[0]!r}")
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("emit() must run inside the transaction that changes the resource")
    data = {"object": obj, "previous_attributes": previous_attributes or {}}
    events = Event.objects.bulk_create(
        Event(
            merchant=merchant,
            livemode=livemode,
            type=type,
            api_version=api_version or settings.API_VERSION,
            resource_id=obj["id"],
            data=data,
        )
        for type in types
    )
    for event in events:
        _dispatch_after_commit(event.id)
    return events


class _DispatchBatch:
    """The ids of the events one transaction wrote, for its after-commit hooks: each hook is
    called once per transaction with all of them (a payment writes two), so a request pays for
    one nudge, not one per event."""

    def __init__(self, hooks):
        self.event_ids: list[str] = []
        self.sent = False
        self.callbacks = [partial(self._send, import_string(hook)) for hook in hooks]
        for callback in self.callbacks:
            # robust: a broker outage after commit must not turn a committed change into a 500.
            transaction.on_commit(callback, robust=True)

    def _send(self, hook) -> None:
        self.sent = True
        hook(self.event_ids)

    def is_open(self, connection) -> bool:
        """Its callbacks are still to run: not sent yet, and not discarded by a rollback
        (run_on_commit holds (savepoint ids, callback, robust) for each callback to run)."""
        return not self.sent and any(c is self.callbacks[0] for _, c, _ in connection.run_on_commit)


def _dispatch_after_commit(event_id: str) -> None:
    """Add the event to its transaction's batch, which hangs off the connection. Ids of events
    whose savepoint rolled back can stay in a batch that commits; the hooks find no such event
    and skip it."""
    hooks = getattr(settings, "EVENT_DISPATCH_HOOKS", ())
    if not hooks:
        return
    connection = transaction.get_connection()
    batch = getattr(connection, "_event_dispatch_batch", None)
    if batch is None or not batch.is_open(connection):
        batch = connection._event_dispatch_batch = _DispatchBatch(hooks)
    batch.event_ids.append(event_id)
