import pytest
from django.db import transaction

from events.catalogue import is_valid_pattern, matches
from events.models import Event
from events.services import emit, emit_all


def sample(obj_id="pay_01J00000000000000000000000"):
    return {"id": obj_id, "object": "payment", "status": "captured"}


@pytest.mark.django_db(transaction=True)
def test_emit_writes_with_the_callers_transaction(merchant, settings):
    settings.EVENT_DISPATCH_HOOKS = []  # no fan-out: the outbox flag stays as emit() wrote it
    with pytest.raises(LookupError), transaction.atomic():
        emit(merchant=merchant, livemode=False, type="payment.captured", obj=sample())
        raise LookupError("the caller fails after emitting")
    assert not Event.objects.exists()
    with transaction.atomic():
        event = emit(
            merchant=merchant,
            livemode=False,
            type="payment.captured",
            obj=sample(),
            previous_attributes={"status": "authorized"},
        )
    stored = Event.objects.get(pk=event.pk)
    assert stored.data == {"object": sample(), "previous_attributes": {"status": "authorized"}}
    assert stored.dispatched_at is None and stored.api_version == "2026-08-19"


@pytest.mark.django_db(transaction=True)
def test_emit_outside_a_transaction_is_a_bug(merchant):
    with pytest.raises(RuntimeError):
        emit(merchant=merchant, livemode=False, type="payment.captured", obj=sample())


@pytest.mark.django_db
def test_emit_refuses_unknown_types(merchant):
    with pytest.raises(ValueError):
        emit(merchant=merchant, livemode=False, type="payment.exploded", obj=sample())
    with pytest.raises(ValueError), transaction.atomic():
        emit_all(merchant=merchant, livemode=False, types=["payment.created", "nope"], obj={})
    assert not Event.objects.exists()


@pytest.mark.django_db
def test_emit_all_writes_its_events_in_one_statement_in_order(merchant, django_assert_num_queries):
    types = ["payment.created", "payment.captured"]
    with transaction.atomic(), django_assert_num_queries(1):
        events = emit_all(merchant=merchant, livemode=False, types=types, obj=sample())
    stored = list(Event.objects.order_by("id"))
    assert [e.id for e in stored] == [e.id for e in events]
    assert [e.type for e in stored] == types
    assert all(e.data == {"object": sample(), "previous_attributes": {}} for e in stored)


@pytest.mark.django_db
def test_dispatch_hooks_run_after_commit(merchant, settings, django_capture_on_commit_callbacks):
    settings.EVENT_DISPATCH_HOOKS = ["tests.events.test_emit.record_dispatch"]
    dispatched.clear()
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            event = emit(
                merchant=merchant,
                livemode=False,
                type="refund.created",
                obj=sample("ref_01J00000000000000000000000"),
            )
            assert dispatched == []
    assert dispatched == [event.id]


@pytest.mark.django_db
def test_one_dispatch_per_transaction_with_every_event_it_wrote(
    merchant, settings, django_capture_on_commit_callbacks
):
    settings.EVENT_DISPATCH_HOOKS = ["tests.events.test_emit.record_dispatch"]
    dispatched.clear()

    def write(type):
        return emit(merchant=merchant, livemode=False, type=type, obj=sample()).id

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with transaction.atomic():
            with pytest.raises(LookupError), transaction.atomic():
                write("payment.created")  # its savepoint rolls back, and its batch with it
                raise LookupError
            created, captured = write("payment.created"), write("payment.captured")
    assert len(callbacks) == 1
    assert dispatched == [created, captured]
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        refunded = write("refund.created")
    assert dispatched == [created, captured, refunded]  # the next transaction: its own batch


dispatched: list[str] = []


def record_dispatch(event_ids):
    dispatched.extend(event_ids)


@pytest.mark.parametrize(
    "pattern, event_type, expected",
    [
        ("*", "dispute.created", True),
        ("payment.*", "payment.captured", True),
        ("payment.*", "payment.some_future_type", True),
        ("payment.*", "payout.paid", False),
        ("payment.captured", "payment.captured", True),
        ("payment.captured", "payment.partially_captured", False),
    ],
)
def test_pattern_matching(pattern, event_type, expected):
    assert matches(pattern, event_type) is expected


@pytest.mark.parametrize(
    "pattern, valid",
    [
        ("*", True),
        ("payment.*", True),
        ("dispute.*", True),
        ("payment.captured", True),
        ("payment.future_type", True),
        ("nope.*", False),
        ("payment", False),
        ("payment.", False),
        ("pay*", False),
        ("payment.cap*", False),
        (7, False),
    ],
)
def test_pattern_validation(pattern, valid):
    assert is_valid_pattern(pattern) is valid
