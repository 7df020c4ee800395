"""api.renderers.dumps: orjson writes what the standard library wrote, and hands it what it
refuses (docs/payments.md "Where a create's CPU goes")."""

import dataclasses
import datetime
import json

import pytest

from api.renderers import _stdlib_dumps, dumps, format_timestamp

MOMENT = datetime.datetime(2026, 11, 28, 12, 30, 5, 123456, tzinfo=datetime.UTC)


def test_a_payment_renders_as_the_standard_library_rendered_it():
    payment = {
        "id": "pay_01M8GYJD8JDM2Y274AGQVJQ6Y2",
        "amount": 1000,
        "captured": True,
        "description": None,
        "reference": 'Größe \u2028 \x01 "quoted" / \\ \n',
        "method": {"card": {"brand": "visa", "last4": "4242"}},
        "metadata": {"z": "1", "a": "2"},  # keys stay in their order
        "items": [1, 2.5, -0.0, []],
        "created": MOMENT,
        "canceled_at": None,
    }
    assert dumps(payment) == _stdlib_dumps(payment)
    assert b'"created":"2026-11-28T12:30:05Z"' in dumps(payment)


@pytest.mark.parametrize(
    "data, expected",
    [
        ({"big": 2**70}, b'{"big":1180591620717411303424}'),  # past 64 bits
        ({1: "a"}, b'{"1":"a"}'),  # a key that is not a string
        ({"key \ud800": 1}, b'{"key \\ud800":1}'),  # an unpaired surrogate, escaped
    ],
)
def test_what_orjson_refuses_is_written_as_before(data, expected):
    assert dumps(data) == expected


@dataclasses.dataclass
class NotJSON:
    value: int


@pytest.mark.parametrize("value", [NotJSON(1), datetime.date(2026, 11, 28), object()])
def test_a_type_json_has_no_form_for_still_raises(value):
    with pytest.raises(TypeError):
        dumps({"value": value})
    with pytest.raises(TypeError):
        json.dumps({"value": value})


def test_a_timestamp_is_written_in_utc_whatever_zone_it_was_first_written_in():
    plus_five = MOMENT.astimezone(datetime.timezone(datetime.timedelta(hours=5)))
    format_timestamp.cache_clear()

    assert format_timestamp(plus_five) == "2026-11-28T12:30:05Z"  # kept under that instant
    assert format_timestamp(MOMENT) == "2026-11-28T12:30:05Z"
    assert format_timestamp(MOMENT + datetime.timedelta(seconds=1)) == "2026-11-28T12:30:06Z"
    assert format_timestamp(None) is None
