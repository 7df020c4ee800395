import datetime

import pytest
from rest_framework import serializers

from api.currencies import CURRENCY_EXPONENTS
from api.fields import StrictCharField, parse_time_filter


def test_currency_table_counts_match_the_spec():
    exponents = list(CURRENCY_EXPONENTS.values())
    assert (exponents.count(2), exponents.count(0), exponents.count(3)) == (32, 16, 7)
    assert CURRENCY_EXPONENTS["jpy"] == 0 and CURRENCY_EXPONENTS["kwd"] == 3


@pytest.mark.parametrize(
    "value, expected",
    [
        ("1767225600", datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)),
        ("2026-01-01T00:00:00Z", datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)),
        ("2026-01-01T02:00:00+02:00", datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)),
        ("2026-01-01T00:00:00", None),  # no zone: ambiguous, refused
        ("yesterday", None),
        ("99999999999999999999", None),
        ("9999-12-31T23:59:59-14:00", None),  # no UTC form in range: not an OverflowError
        ("0001-01-01T00:00:00+01:00", None),
    ],
)
def test_time_filters_accept_rfc3339_or_unix_seconds(value, expected):
    assert parse_time_filter(value) == expected


@pytest.mark.parametrize("text", ["a\ud800b", "\udfff", "ok \ud83d"])
def test_a_strict_string_refuses_a_surrogate_as_drfs_own_check_does(text):
    with pytest.raises(serializers.ValidationError) as ours:
        StrictCharField().run_validation(text)
    with pytest.raises(serializers.ValidationError) as drfs:
        serializers.CharField(trim_whitespace=False).run_validation(text)
    assert ours.value.detail == drfs.value.detail
    assert ours.value.detail[0].code == "surrogate_characters_not_allowed"
    assert StrictCharField().run_validation("plain \U0001f600 text") == "plain \U0001f600 text"
