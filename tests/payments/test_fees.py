"""Fees: integer arithmetic, half-up rounding per component, both schedule shapes."""

import pytest

from payments.fees import InvalidSchedule, fees_for, parse_schedule, percent_of


@pytest.mark.parametrize(
    "amount, bps, expected",
    [(1000, 140, 14), (1035, 140, 14), (1036, 140, 15), (50, 100, 1), (49, 100, 0), (0, 140, 0)],
)
def test_percent_rounds_half_up_in_integers(amount, bps, expected):
    # 1035 * 1.4% = 14.49 -> 14; 1036 * 1.4% = 14.504 -> 15; 50 * 1% = 0.5 -> 1
    assert percent_of(amount, bps) == expected


def test_default_schedule_is_blended():
    fees = fees_for(pricing={}, amount=1000, currency="eur", brand="visa")
    assert fees == {
        "amount": 39,
        "currency": "eur",
        "breakdown": {"mdr": 14, "fixed": 25, "scheme": 0},
    }


def test_blended_fixed_part_is_per_currency():
    pricing = {"type": "blended", "rate_bps": 250, "fixed": {"usd": 30}}
    assert fees_for(pricing=pricing, amount=2000, currency="usd", brand="visa")["amount"] == 80
    assert fees_for(pricing=pricing, amount=2000, currency="jpy", brand="visa")["breakdown"] == {
        "mdr": 50,
        "fixed": 0,
        "scheme": 0,
    }


def test_interchange_plus_passes_scheme_fees_through_by_brand():
    pricing = {
        "type": "interchange_plus",
        "markup_bps": 20,
        "fixed": {"eur": 10},
        "scheme_bps": {"visa": 25, "default": 40},
    }
    visa = fees_for(pricing=pricing, amount=10_000, currency="eur", brand="visa")
    assert visa["breakdown"] == {"mdr": 20, "fixed": 10, "scheme": 25}
    assert visa["amount"] == 55
    other = fees_for(pricing=pricing, amount=10_000, currency="eur", brand="mastercard")
    assert other["breakdown"]["scheme"] == 40


def test_large_amounts_stay_exact():
    amount = 2**53 - 1
    fees = fees_for(
        pricing={"type": "blended", "rate_bps": 1}, amount=amount, currency="eur", brand="visa"
    )
    assert fees["breakdown"]["mdr"] == (amount + 5000) // 10000


@pytest.mark.parametrize(
    "pricing",
    [
        {"type": "flat"},
        {"type": "blended"},
        {"type": "blended", "rate_bps": 1.5},
        {"type": "blended", "rate_bps": -1},
        {"type": "blended", "rate_bps": 10, "fixed": {"eur": "25"}},
        {"type": "interchange_plus", "markup_bps": 10, "scheme_bps": []},
    ],
)
def test_malformed_schedules_are_refused(pricing):
    with pytest.raises(InvalidSchedule):
        parse_schedule(pricing)
