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
    hooks named in settings.EVENT_DISPATCH_HOOKS are nudged with the event id; a lost nudge is
    recovered by the webhooks sweeper, since `dispatched_at` stays null.
    """
    if type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type!r}")
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("emit() must run inside the transaction that changes the resource")
    event = Event.objects.create(
        merchant=merchant,
        livemode=livemode,
        type=type,
        api_version=api_version or settings.API_VERSION,
        resource_id=obj["id"],
        data={"object": obj, "previous_attributes": previous_attributes or {}},
    )
    for hook in getattr(settings, "EVENT_DISPATCH_HOOKS", ()):
        # robust: a broker outage after commit must not turn a committed change into a 500.
        transaction.on_commit(partial(import_string(hook), event.id), robust=True)
    return event
