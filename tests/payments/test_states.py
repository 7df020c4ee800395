"""The status machine against the spec's transitions table, row by row."""

import pytest

from api.errors import ProcessingFailed
from payments.states import TRANSITIONS, Status, Trigger, can, check_transition

S = Status

# (from, trigger, to) for every row of spec "Payment transitions", in its order.
SPEC_ROWS = [
    (None, Trigger.CREATE, S.CAPTURED),
    (None, Trigger.CREATE, S.AUTHORIZED),
    (None, Trigger.CREATE, S.PENDING),
    (None, Trigger.CREATE, S.REQUIRES_ACTION),
    (None, Trigger.CREATE, S.PROCESSING),
    (None, Trigger.CREATE, S.DECLINED),
    (None, Trigger.CREATE, S.FAILED),
    *[(S.PENDING, Trigger.CONFIRM, to) for to in (S.CAPTURED, S.AUTHORIZED, S.DECLINED, S.FAILED)],
    (S.PENDING, Trigger.EXPIRE, S.EXPIRED),
    (S.REQUIRES_ACTION, Trigger.EXPIRE, S.EXPIRED),
    (S.REQUIRES_ACTION, Trigger.PAYER_ACTION, S.CAPTURED),
    (S.REQUIRES_ACTION, Trigger.PAYER_ACTION, S.DECLINED),
    (S.REQUIRES_ACTION, Trigger.PAYER_ACTION, S.FAILED),
    (S.PROCESSING, Trigger.RESOLVE, S.CAPTURED),
    (S.AUTHORIZED, Trigger.CAPTURE, S.CAPTURED),
    (S.AUTHORIZED, Trigger.EXPIRE, S.EXPIRED),
    (S.PENDING, Trigger.CANCEL, S.CANCELED),
    (S.REQUIRES_ACTION, Trigger.CANCEL, S.CANCELED),
    (S.AUTHORIZED, Trigger.CANCEL, S.CANCELED),
    (S.CAPTURED, Trigger.REFUND, S.PARTIALLY_REFUNDED),
    (S.CAPTURED, Trigger.REFUND, S.REFUNDED),
    (S.PARTIALLY_REFUNDED, Trigger.REFUND, S.REFUNDED),
]


@pytest.mark.parametrize("source, trigger, target", SPEC_ROWS)
def test_every_spec_row_is_allowed(source, trigger, target):
    check_transition(source, trigger, target)


def test_every_trigger_has_exactly_one_row():
    assert sorted(row.trigger for row in TRANSITIONS) == sorted(Trigger)


@pytest.mark.parametrize(
    "source, trigger, code",
    [
        (S.CAPTURED, Trigger.CONFIRM, "payment_not_confirmable"),
        (S.AUTHORIZED, Trigger.CONFIRM, "payment_not_confirmable"),
        (S.PENDING, Trigger.CAPTURE, "payment_not_capturable"),
        (S.CAPTURED, Trigger.CAPTURE, "payment_not_capturable"),
        (S.CAPTURED, Trigger.CANCEL, "payment_not_cancelable"),
        (S.PROCESSING, Trigger.CANCEL, "payment_not_cancelable"),
        (S.AUTHORIZED, Trigger.RESOLVE, "payment_not_advanceable"),
        (S.AUTHORIZED, Trigger.REFUND, "payment_not_refundable"),
        (S.REFUNDED, Trigger.REFUND, "payment_not_refundable"),
    ],
)
def test_moves_outside_the_table_are_refused_with_the_triggers_code(source, trigger, code):
    with pytest.raises(ProcessingFailed) as refused:
        check_transition(source, trigger, S.CAPTURED)
    assert refused.value.code == code and source in refused.value.message


@pytest.mark.parametrize("terminal", [S.DECLINED, S.FAILED, S.CANCELED, S.EXPIRED])
def test_terminal_statuses_go_nowhere(terminal):
    assert not any(can(terminal, trigger) for trigger in Trigger)


def test_a_target_outside_the_row_is_a_bug_not_a_client_error():
    with pytest.raises(ValueError):
        check_transition(S.AUTHORIZED, Trigger.CAPTURE, S.REFUNDED)


@pytest.mark.parametrize("source", [S.CAPTURED, S.PARTIALLY_REFUNDED, S.REFUNDED])
def test_money_taken_can_be_disputed(source):
    """Not a spec row (how a payment enters `disputed` is not shown): our decision,
    docs/processors.md "Disputes"."""
    check_transition(source, Trigger.DISPUTE, S.DISPUTED)


@pytest.mark.parametrize(
    "source", [S.PENDING, S.PROCESSING, S.AUTHORIZED, S.DECLINED, S.CANCELED, S.DISPUTED]
)
def test_a_payment_that_holds_no_taken_money_cannot_be_disputed(source):
    with pytest.raises(ProcessingFailed) as refused:
        check_transition(source, Trigger.DISPUTE, S.DISPUTED)
    assert refused.value.code == "payment_not_disputable"


def test_nothing_leaves_disputed():
    assert not any(can(S.DISPUTED, trigger) for trigger in Trigger)
