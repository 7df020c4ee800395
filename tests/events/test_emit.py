import pytest
from django.db import transaction

from events.catalogue import is_valid_pattern, matches
from events.models import Event
from events.services import emit, emit_all


def sample(obj_id="pay_01J00000000000000000000000"):
    return {"id": obj_id, "object": "payment", "status": "captured"}


@pytest.mark.django_db(transaction=True)
def test_emit_writes_with_the_callers_transaction(merchant, settings):
    settings.EVENT_FAN_OUT_HOOKS = []  # no fan-out: the outbox flag stays as emit() wrote it
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
def test_emit_all_writes_its_events_in_one_statement_in_order(
    merchant, settings, django_assert_num_queries
):
    settings.EVENT_FAN_OUT_HOOKS = []
    types = ["payment.created", "payment.captured"]
    # resource_version included: the database numbers the events (no read before the INSERT).
    with transaction.atomic(), django_assert_num_queries(1):
        events = emit_all(merchant=merchant, livemode=False, types=types, obj=sample())
    stored = list(Event.objects.order_by("id"))
    assert [e.id for e in stored] == [e.id for e in events]
    assert [e.type for e in stored] == types
    assert all(e.data == {"object": sample(), "previous_attributes": {}} for e in stored)


@pytest.mark.django_db(transaction=True)
def test_fan_out_hooks_run_in_the_transaction_and_the_events_commit_dispatched(merchant, settings):
    settings.EVENT_FAN_OUT_HOOKS = ["tests.events.test_emit.record_fan_out"]
    fanned_out.clear()
    with transaction.atomic():
        events = emit_all(
            merchant=merchant, livemode=False, types=["payment.created"], obj=sample()
        )
        assert fanned_out == [(events[0].id, True)]  # called before the commit, inside it
    assert Event.objects.get(pk=events[0].pk).dispatched_at is not None
    emit_skipping_fan_out = transaction.atomic()(emit)
    event = emit_skipping_fan_out(
        merchant=merchant, livemode=False, type="refund.created", obj=sample(), fan_out=False
    )
    assert len(fanned_out) == 1  # not called: the caller fans it out itself
    assert Event.objects.get(pk=event.pk).dispatched_at is None


@pytest.mark.django_db(transaction=True)
def test_a_failing_fan_out_takes_the_event_with_it(merchant, settings):
    settings.EVENT_FAN_OUT_HOOKS = ["tests.events.test_emit.fail_fan_out"]
    with pytest.raises(LookupError), transaction.atomic():
        emit(merchant=merchant, livemode=False, type="payment.created", obj=sample())
    assert not Event.objects.exists()


fanned_out: list[tuple[str, bool]] = []


def record_fan_out(events):
    in_transaction = transaction.get_connection().in_atomic_block
    fanned_out.extend((event.id, in_transaction) for event in events)


def fail_fan_out(events):
    raise LookupError("the fan-out failed")


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


def emitted(merchant, types, obj_id, livemode=False) -> list[int]:
    with transaction.atomic():
        events = emit_all(merchant=merchant, livemode=livemode, types=types, obj=sample(obj_id))
    return [Event.objects.get(pk=e.pk).resource_version for e in events]


@pytest.mark.django_db
def test_each_change_of_a_resource_carries_the_next_version(merchant, other_merchant, settings):
    settings.EVENT_FAN_OUT_HOOKS = []
    payment, other = "pay_01J0000000000000000000000A", "pay_01J0000000000000000000000B"
    assert emitted(merchant, ["payment.created", "payment.authorized"], payment) == [1, 2]
    assert emitted(merchant, ["payment.created"], other) == [1]  # its own count
    assert emitted(merchant, ["payment.captured"], payment) == [3]
    # Modes and merchants never share a count (a test object's id cannot collide with live).
    assert emitted(merchant, ["payment.created"], payment, livemode=True) == [1]
    assert emitted(other_merchant, ["payment.created"], payment) == [1]
