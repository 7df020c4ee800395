"""How the fault-injection suite (bench/fault_report.py) judges answers and a scenario."""

import pytest

from bench.fault_report import (
    Answer,
    broken_invariants,
    caught_up,
    differs,
    first_after,
    summarise,
    table,
)


def paid(payment_id: str, at: float = 1.0, **extra) -> Answer:
    return Answer(at, status=201, payment_id=payment_id, **extra)


def error(status: int, code: str, at: float = 1.0) -> Answer:
    return Answer(at, status=status, code=code)


@pytest.mark.parametrize(
    ("answer", "final"),
    [
        (paid("pay_A"), True),
        (error(402, "card_declined"), True),
        (error(400, "token_already_used"), True),
        (error(409, "idempotency_key_conflict"), True),
        (error(409, "idempotency_key_in_use"), False),
        (error(429, "rate_limit_exceeded"), False),
        (error(500, "internal_error"), False),
        (error(503, ""), False),
        (Answer(1.0, failure="timeout"), False),
        (Answer(1.0, failure="connection"), False),
    ],
)
def test_which_answers_are_final(answer, final):
    assert answer.final is final


def test_kind_is_the_status_class_or_the_failure():
    assert [a.kind for a in (paid("pay_A"), error(409, "x"), error(502, ""))] == [
        "2xx",
        "4xx",
        "5xx",
    ]
    assert Answer(1.0, failure="timeout").kind == "timeout"


@pytest.mark.parametrize(
    ("answers", "different"),
    [
        ([paid("pay_A")], False),
        ([Answer(1.0, failure="timeout"), error(500, ""), paid("pay_A")], False),
        ([paid("pay_A"), paid("pay_A", verify=True)], False),
        ([error(409, "idempotency_key_in_use"), paid("pay_A"), paid("pay_A")], False),
        # the crash window: the first try made a payment, its retry another
        ([paid("pay_A"), paid("pay_B", verify=True)], True),
        ([paid("pay_A"), error(400, "token_already_used")], True),
        ([error(402, "card_declined"), paid("pay_A")], True),
        ([], False),
    ],
)
def test_a_key_differs_when_a_later_final_answer_is_not_the_first(answers, different):
    assert differs(answers) is different


def test_first_after_counts_from_the_moment():
    assert first_after([1.0, 12.5, 11.25], 10.0) == 1.25
    assert first_after([1.0, 2.0], 10.0) is None


def test_caught_up_is_when_the_last_expected_event_was_delivered():
    delivered = {"evt_1": 8.0, "evt_2": 31.5, "evt_late_other": 50.0}
    assert caught_up({"evt_1", "evt_2"}, delivered, fault_ended=10.0) == 21.5
    assert caught_up({"evt_1"}, delivered, fault_ended=10.0) == 0.0
    assert caught_up({"evt_1", "evt_3"}, delivered, fault_ended=10.0) is None


def test_summary_counts_answers_payments_and_events():
    keys = {
        "k-1": [Answer(9.0, failure="timeout"), paid("pay_1", at=10.5), paid("pay_1", verify=True)],
        "k-2": [paid("pay_2", at=3.0), paid("pay_9", at=20.0, verify=True)],
        "k-3": [error(500, "internal_error", at=4.0)] * 6,
        "k-4": [paid("pay_4", at=5.0)],
        # the first try's payment committed, its answer was lost, the retry was refused
        "k-5": [error(503, "", at=6.0), error(400, "token_already_used", at=7.0)],
    }
    in_database = {"k-1": ["pay_1"], "k-2": ["pay_2", "pay_9"], "k-3": ["pay_3"], "k-5": ["pay_5"]}
    figures = summarise(
        "pg-cut",
        keys,
        in_database,
        expected_events={"evt_1", "evt_2", "evt_3"},
        delivered={"evt_1": 2.0, "evt_3": 13.0, "evt_other": 14.0},
        fault_ended=10.0,
    )
    assert figures["requests"] == 12  # the verify replays are not the clients' traffic
    assert figures["answers"] == {"2xx": 3, "4xx": 1, "5xx": 7, "timeout": 1, "connection": 0}
    assert figures["errors"] == {"500 internal_error": 6, "503": 1, "400 token_already_used": 1}
    assert figures["keys_without_final_answer"] == 1
    assert (figures["payments_told"], figures["payments_found"]) == (4, 5)
    assert figures["payments_lost"] == 1  # pay_4
    assert figures["payments_never_told"] == 2  # pay_3 (no final answer), pay_5
    assert figures["payments_unacknowledged"] == 2  # pay_9 (k-2 was told pay_2), pay_5
    assert figures["keys_charged_twice"] == 1  # k-2
    assert figures["keys_different_answer"] == 1  # k-2
    assert (figures["events_delivered"], figures["events_pending"]) == (2, 1)
    assert (figures["recover_payment_s"], figures["recover_webhook_s"]) == (0.5, 3.0)
    assert figures["events_caught_up_s"] is None  # evt_2 is pending
    assert figures["broken"] == [
        "keys_different_answer=1",
        "payments_lost=1",
        "payments_unacknowledged=2",
        "keys_charged_twice=1",
    ]


def test_a_clean_scenario_breaks_nothing_and_renders_a_row():
    figures = summarise("baseline", {"k": [paid("pay_1")]}, {"k": ["pay_1"]}, set(), {}, 0.0)
    assert broken_invariants(figures) == figures["broken"] == []
    header, row = table([figures]).splitlines()
    assert header.split()[:3] == ["scenario", "req", "2xx"]
    assert row.split()[:3] == ["baseline", "1", "1"]
    assert row.split()[-4:] == ["0.0", "1.0", "-", "0.0"]
