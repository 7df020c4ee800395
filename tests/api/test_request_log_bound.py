"""A publishable key is public: its refused requests may cost its merchant's request log a
bounded number of entries a minute, the rest counted on the last one kept (issue 35;
docs/request-log.md "Refused publishable-key requests")."""

import datetime

import pytest

from tests.api.test_request_logs_api import logs

pytestmark = pytest.mark.django_db

MINUTE = datetime.datetime(2026, 11, 28, 12, 0, 5, tzinfo=datetime.UTC)


def refused(publishable_api, count: int) -> None:
    statuses = {publishable_api.get("/v1/payments").status_code for _ in range(count)}
    assert statuses == {403}  # secret_key_required


@pytest.fixture
def three_a_minute(settings, time_machine):
    settings.REQUEST_LOG_REFUSED_PUBLISHABLE_PER_MINUTE = 3
    time_machine.move_to(MINUTE, tick=False)


def omitted(entries) -> list:
    """(status, omitted_after), newest first, of every entry but the log's own reads."""
    return [
        (entry["status"], entry["omitted_after"])
        for entry in entries
        if entry["path"] != "/v1/request-logs"
    ]


def test_a_publishable_keys_refusals_keep_a_few_entries_a_minute_and_count_the_rest(
    api, publishable_api, three_a_minute, time_machine
):
    refused(publishable_api, 10)
    api.get("/v1/payments/pay_unknown")  # the merchant's own refusals are all kept
    assert omitted(logs(api)) == [(404, None), (403, 7), (403, None), (403, None)]
    refused(publishable_api, 2)  # the same minute: the count on the same entry grows
    assert omitted(logs(api))[1] == (403, 9)
    time_machine.move_to(MINUTE + datetime.timedelta(minutes=1), tick=False)
    refused(publishable_api, 4)
    entries = logs(api)
    assert omitted(entries)[:3] == [(403, 1), (403, None), (403, None)]
    assert omitted(entries)[4] == (403, 9)  # the first minute's count is kept
    assert len(omitted(entries)) == 7


def test_a_publishable_keys_successes_are_all_kept(api, publishable_api, three_a_minute):
    answers = {publishable_api.get("/v1/sandbox/test-cards").status_code for _ in range(5)}
    assert answers == {200}
    assert omitted(logs(api)) == [(200, None)] * 5
