"""emit(): write an event, and its fan-out, inside the caller's transaction."""

from functools import cache

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from accounts.models import Merchant
from events.catalogue import EVENT_TYPES
from events.models import Event
from infra.rows import insert_instances, new_instance


def previous_attributes(before: dict | None, after: dict) -> dict:
    """`data.previous_attributes` of an event: the top-level attributes of the resource whose
    value changed, with their old value (one that appeared has the old value None); {} for a
    resource just created (`before` None). Shared by every resource's events."""
    if before is None:
        return {}
    keys = after.keys() | before.keys()
    return {key: before.get(key) for key in keys if before.get(key) != after.get(key)}


def emit(
    *,
    merchant: Merchant,
    livemode: bool,
    type: str,
    obj: dict,
    previous_attributes: dict | None = None,
    api_version: str | None = None,
    fan_out: bool = True,
) -> Event:
    """Record `type` for the resource `obj` (as the API renders it now).

    Must be called inside the transaction that makes the change, so that any state a client
    can read has already produced its event (spec "States and transitions"). The hooks named in
    settings.EVENT_FAN_OUT_HOOKS run in that transaction too, with the events written: the
    webhooks room writes the deliveries there, so an event commits already fanned out
    (`dispatched_at` set) or not at all. `fan_out=False` leaves that to the caller.
    """
    (event,) = emit_all(
        merchant=merchant,
        livemode=livemode,
        types=[type],
        obj=obj,
        previous_attributes=previous_attributes,
        api_version=api_version,
        fan_out=fan_out,
    )
    return event


def emit_all(**about) -> list[Event]:
    """emit() for several types about the same state of one resource (a payment created and
    captured in one call), written in one INSERT, in the order given; `about`: the arguments
    of new_events()."""
    events = new_events(**about)
    insert_instances(events)
    events_written(events)
    return events


def emit_change(
    resource, *, after: dict, types: list[str], before: dict | None, api_version=None
) -> list[Event]:
    """emit_all() for a resource (a row with `merchant` and `livemode`) in its new state
    `after` (its wire object), with `previous_attributes` against `before`."""
    return emit_all(
        merchant=resource.merchant,
        livemode=resource.livemode,
        types=types,
        obj=after,
        previous_attributes=previous_attributes(before, after),
        api_version=api_version,
    )


def new_events(
    *,
    merchant: Merchant,
    livemode: bool,
    types: list[str],
    obj: dict,
    previous_attributes: dict | None = None,
    api_version: str | None = None,
    fan_out: bool = True,
    one_statement: bool = False,
) -> list[Event]:
    """The events emit_all() writes, not stored yet: for a caller that inserts them in its
    own statement (a payment created with its events, behind its operation's fence), then
    calls events_written() in the same transaction. `one_statement`: that statement is the
    whole transaction, in autocommit (with fan_out_guard in it)."""
    if unknown := [t for t in types if t not in EVENT_TYPES]:
        raise ValueError(f"unknown event type {unknown[0]!r}")
    if not one_statement and not transaction.get_connection().in_atomic_block:
        raise RuntimeError("emit() must run inside the transaction that changes the resource")
    now = timezone.now()
    data = {"object": obj, "previous_attributes": previous_attributes or {}}
    # Fanned out by events_written(), in this transaction; without hooks, left to whoever
    # does it later (the webhooks sweeper, or the caller).
    dispatched = now if fan_out and settings.EVENT_FAN_OUT_HOOKS else None
    return [
        new_instance(
            Event,
            merchant=merchant,
            livemode=livemode,
            type=type,
            api_version=api_version or settings.API_VERSION,
            resource_id=obj["id"],
            data=data,
            created=now,
            dispatched_at=dispatched,
        )
        for type in types
    ]


def events_written(events: list[Event], *, read=None) -> None:
    """After `events` are inserted, in their transaction: the fan-out hooks run on those
    marked dispatched (new_events). `read`: the value of fan_out_read(events)'s statement,
    when the writer ran it in its own; the hook with a `read` gets it (else reads itself)."""
    if events and events[0].dispatched_at is not None:
        for hook in fan_out_hooks(tuple(settings.EVENT_FAN_OUT_HOOKS)):
            if read is not None and hasattr(hook, "read"):
                hook(events, read=read)
            else:
                hook(events)


def fan_out_read(events: list[Event]) -> tuple[str, list] | None:
    """The one read a fan-out hook makes first in the events' transaction (its `read`
    attribute, a SELECT of one value: the webhooks room's locked revision), for a writer that
    inserts `events` in a statement of its own to run there too, one round trip fewer; its
    value then goes to events_written(events, read=...). None: nothing to run."""
    if not events or events[0].dispatched_at is None:
        return None
    hooks = fan_out_hooks(tuple(settings.EVENT_FAN_OUT_HOOKS))
    reads = [hook.read(events) for hook in hooks if hasattr(hook, "read")]
    return reads[0] if len(reads) == 1 else None


def fan_out_guard(events: list[Event]) -> tuple[str, list] | None:
    """A condition (SQL, params) under which no fan-out hook writes anything for `events`
    (each hook's `guard`, all of them holding), for a writer that inserts them in one
    statement to make that statement its own transaction: the hooks, called after it with
    its `read`, then find nothing to do. None: some hook may write (or cannot say)."""
    if not events or events[0].dispatched_at is None:
        return None
    hooks = fan_out_hooks(tuple(settings.EVENT_FAN_OUT_HOOKS))
    guards = [hook.guard(events) if hasattr(hook, "guard") else None for hook in hooks]
    if not guards or None in guards:
        return None
    return " AND ".join(sql for sql, _ in guards), [p for _, params in guards for p in params]


@cache
def fan_out_hooks(paths: tuple[str, ...]) -> tuple:
    return tuple(import_string(path) for path in paths)
