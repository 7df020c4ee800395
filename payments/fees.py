"""Fees: a merchant's pricing schedule, applied once at capture (spec "Payment object" fees).

`Merchant.pricing` holds the schedule; `{}` means DEFAULT_SCHEDULE. Two shapes:

    {"type": "blended", "rate_bps": 140, "fixed": {"eur": 25, "usd": 30}}
    {"type": "interchange_plus", "markup_bps": 20, "fixed": {"eur": 10},
     "scheme_bps": {"visa": 25, "mastercard": 30, "default": 35}}

Either shape may carry `"refund_fixed": {"eur": 10}`: what one succeeded refund costs, per
currency (none listed: refunds are free; docs/refunds.md "Fee").

Rates are integers in basis points (1/100 of a percent), fixed amounts integers in minor units
of the payment's currency (a currency not listed pays no fixed part). Every figure is an
integer: each component is rounded half up to the minor unit on its own, and the total is the
sum of the rounded components, so the breakdown always adds up (docs/payments.md "Fees").
"""

from dataclasses import dataclass, field
from functools import lru_cache

import orjson

BPS = 10_000
DEFAULT_SCHEDULE: dict = {"type": "blended", "rate_bps": 140, "fixed": {"eur": 25, "usd": 30}}


class InvalidSchedule(ValueError):
    pass


@dataclass(frozen=True)
class Schedule:
    type: str
    rate_bps: int  # blended rate, or the markup on interchange-plus
    fixed: dict[str, int] = field(default_factory=dict)
    scheme_bps: dict[str, int] = field(default_factory=dict)  # interchange-plus only
    refund_fixed: dict[str, int] = field(default_factory=dict)

    def scheme_rate(self, brand: str | None) -> int:
        if self.type != "interchange_plus":
            return 0
        return self.scheme_bps.get(brand or "", self.scheme_bps.get("default", 0))


def _non_negative_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidSchedule(f"pricing.{name} must be a non-negative integer")
    return value


def _int_map(value, name: str) -> dict[str, int]:
    if not isinstance(value, dict):
        raise InvalidSchedule(f"pricing.{name} must be an object")
    return {key: _non_negative_int(v, f"{name}.{key}") for key, v in value.items()}


def parse_schedule(pricing: dict | None) -> Schedule:
    """`Merchant.pricing` -> Schedule; InvalidSchedule names the first bad field. Parsed once
    per process for each schedule (its JSON the key: a create reads it twice; callers only read
    a Schedule), a bad one every time it is asked."""
    return _schedule_of(orjson.dumps(pricing))


@lru_cache(maxsize=1024)
def _schedule_of(pricing_json: bytes) -> Schedule:
    data = orjson.loads(pricing_json) or DEFAULT_SCHEDULE
    if not isinstance(data, dict):
        raise InvalidSchedule("pricing must be an object")
    kind = data.get("type")
    if kind == "blended":
        rate_key = "rate_bps"
    elif kind == "interchange_plus":
        rate_key = "markup_bps"
    else:
        raise InvalidSchedule("pricing.type must be blended or interchange_plus")
    return Schedule(
        type=kind,
        rate_bps=_non_negative_int(data.get(rate_key), rate_key),
        fixed=_int_map(data.get("fixed", {}), "fixed"),
        scheme_bps=_int_map(data.get("scheme_bps", {}), "scheme_bps")
        if kind == "interchange_plus"
        else {},
        refund_fixed=_int_map(data.get("refund_fixed", {}), "refund_fixed"),
    )


def percent_of(amount: int, bps: int) -> int:
    """amount * bps / 10000, rounded half up, in integers only."""
    return (amount * bps + BPS // 2) // BPS


def fees_for(*, pricing: dict | None, amount: int, currency: str, brand: str | None) -> dict:
    """The `fees` object for a capture of `amount`."""
    schedule = parse_schedule(pricing)
    breakdown = {
        "mdr": percent_of(amount, schedule.rate_bps),
        "fixed": schedule.fixed.get(currency, 0),
        "scheme": percent_of(amount, schedule.scheme_rate(brand)),
    }
    return {"amount": sum(breakdown.values()), "currency": currency, "breakdown": breakdown}


def refund_fee_for(*, pricing: dict | None, currency: str) -> dict:
    """The refund's `fee` object: the schedule's fixed refund fee for the currency (the
    payment's own fees are not given back)."""
    fixed = parse_schedule(pricing).refund_fixed.get(currency, 0)
    return {"amount": fixed, "currency": currency, "breakdown": {"fixed": fixed}}
