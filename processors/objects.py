"""The link from our objects to the processor's (processors.models.ProcessorObject): written
by the connector as soon as the processor names its object, read by every later call, by the
processor's webhooks (to find ours) and by the back office."""

from django.db import IntegrityError, transaction

from processors.models import ConnectorAccount, ProcessorObject

Kind = ProcessorObject.Kind


def link(kind: str, our_id: str, account: ConnectorAccount, processor_id: str, **extra) -> None:
    """Records that `our_id` is `processor_id` at `account`; asked again (a retry, recovery),
    it changes nothing but what `extra` adds."""
    try:
        with transaction.atomic():
            ProcessorObject.objects.create(
                kind=kind, our_id=our_id, account=account, processor_id=processor_id, extra=extra
            )
    except IntegrityError:
        note(kind, our_id, **extra)


def note(kind: str, our_id: str, **extra) -> None:
    """Adds what else the processor named (a payment's charge id) to an existing link."""
    row = ProcessorObject.objects.filter(kind=kind, our_id=our_id).first()
    if row is not None and any(row.extra.get(name) != value for name, value in extra.items()):
        row.extra = {**row.extra, **extra}
        row.save(update_fields=["extra"])


def linked(kind: str, our_id: str) -> ProcessorObject | None:
    """The processor's object behind one of ours, with its account."""
    rows = ProcessorObject.objects.select_related("account")
    return rows.filter(kind=kind, our_id=our_id).first()


def ours(account: ConnectorAccount, processor_id: str) -> ProcessorObject | None:
    """Our object behind the processor's (for its webhooks)."""
    return ProcessorObject.objects.filter(account=account, processor_id=processor_id).first()
