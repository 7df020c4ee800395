"""GET /v1/events/feed (events/feed.py, docs/events.md "The feed"): a merchant's events of the
key's mode in commit order, a cursor after each, a long poll. The feed shows only events whose
transaction has ended, so these tests commit (transaction=True)."""

import threading

import pytest
from django.db import connections

from events.feed import START, WAITERS, Position, encode_cursor
from events.models import Event
from tests.webhooks.conftest import payment_object

FEED = "/v1/events/feed"


def visible(api, count: int) -> None:
    """Until the feed shows `count` events: it waits for every older transaction of the server
    to end, other sessions' (other test runs) included. A wait for events, not for a time."""
    while len(api.get(FEED, {"limit": 100, "wait": 1}).json()["data"]) < count:
        pass


def error_of(response, param: str, code: str = "invalid_parameter") -> None:
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert (error["type"], error["code"], error["param"]) == ("validation_error", code, param)


@pytest.mark.django_db(transaction=True)
def test_the_feed_pages_oldest_first_with_a_cursor_after_each_event(
    api, live_api, other_api, emit_event
):
    written = [emit_event("payment.created", payment_object(f"pay_{n:026d}")) for n in range(5)]
    live = emit_event("payment.created", livemode=True)
    visible(api, 5)
    visible(live_api, 1)

    first = api.get(FEED, {"limit": 2}).json()
    assert first["object"] == "list" and first["has_more"] is True
    assert [entry["event"]["id"] for entry in first["data"]] == [e.id for e in written[:2]]
    assert {entry["object"] for entry in first["data"]} == {"feed_entry"}
    assert first["data"][0]["event"]["data"]["object"] == payment_object("pay_" + "0" * 26)
    assert first["next_cursor"] == first["data"][-1]["cursor"]

    # Any entry's cursor reads on from its event: a consumer stores it after processing.
    from_second = api.get(FEED, {"after": first["data"][0]["cursor"]}).json()
    assert [entry["event"]["id"] for entry in from_second["data"]] == [e.id for e in written[1:]]
    assert from_second["has_more"] is False

    rest = api.get(FEED, {"after": first["next_cursor"], "limit": 100}).json()
    assert [entry["event"]["id"] for entry in rest["data"]] == [e.id for e in written[2:]]
    end = api.get(FEED, {"after": rest["next_cursor"]}).json()
    assert end["data"] == [] and end["next_cursor"] == rest["next_cursor"]

    assert [entry["event"]["id"] for entry in live_api.get(FEED).json()["data"]] == [live.id]
    assert other_api.get(FEED).json()["data"] == []
    error_of(other_api.get(FEED, {"after": first["next_cursor"]}), "after", "cursor_expired")


@pytest.mark.django_db(transaction=True)
def test_after_now_is_the_end_of_the_feed_and_what_comes_next_follows(api, emit_event):
    assert api.get(FEED, {"after": "now"}).json()["next_cursor"] == encode_cursor(START)
    emit_event()
    visible(api, 1)
    end = api.get(FEED, {"after": "now"}).json()
    assert end["data"] == [] and end["has_more"] is False
    assert end["next_cursor"] == api.get(FEED).json()["next_cursor"]
    later = emit_event()
    visible(api, 2)
    after_end = api.get(FEED, {"after": end["next_cursor"]}).json()
    assert [entry["event"]["id"] for entry in after_end["data"]] == [later.id]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "params, param",
    [
        ({"after": "evt_01J00000000000000000000000"}, "after"),
        ({"after": "Zm9vOjE"}, "after"),  # "foo:1"
        ({"after": encode_cursor(Position(1, 1))[:-1] + "!"}, "after"),
        ({"wait": "-1"}, "wait"),
        ({"wait": "21"}, "wait"),
        ({"wait": "1.5"}, "wait"),
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
    ],
)
def test_bad_parameters_are_400_naming_them(api, params, param):
    error_of(api.get(FEED, params), param)


@pytest.mark.django_db(transaction=True)
def test_a_cursor_whose_event_was_purged_is_refused_not_skipped(api, emit_event):
    first, second, third = (emit_event() for _ in range(3))
    visible(api, 3)
    cursor = api.get(FEED, {"limit": 1}).json()["next_cursor"]
    Event.objects.filter(pk=first.pk).delete()  # as retention does, oldest first
    error_of(api.get(FEED, {"after": cursor}), "after", code="cursor_expired")
    # Without a cursor the feed starts at the oldest event left.
    assert [e["event"]["id"] for e in api.get(FEED).json()["data"]] == [second.id, third.id]


@pytest.mark.django_db(transaction=True)
def test_a_long_poll_answers_with_the_event_committed_while_it_waits(api, emit_event, settings):
    settings.EVENT_FEED_WAITERS = 1
    head = api.get(FEED).json()["next_cursor"]
    written: list[Event] = []

    def write_once_the_poll_waits():
        try:
            for _ in range(100_000):  # the poll holds the process's one waiting place
                if WAITERS.waiting:
                    written.append(emit_event("payment.created"))
                    return
                threading.Event().wait(0.001)
        finally:
            connections.close_all()

    writer = threading.Thread(target=write_once_the_poll_waits)
    writer.start()
    answer = api.get(FEED, {"after": head, "wait": 20}).json()
    writer.join()
    assert written, "the poll never waited"
    assert [entry["event"]["id"] for entry in answer["data"]] == [written[0].id]


@pytest.mark.django_db(transaction=True)
def test_a_wait_beyond_the_process_cap_is_429_with_retry_after(api, emit_event, settings):
    settings.EVENT_FEED_WAITERS = 0
    refused = api.get(FEED, {"wait": 5})
    assert refused.status_code == 429 and refused["Retry-After"] == "1"
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    # A page that has events never waits, so never counts.
    event = emit_event()
    settings.EVENT_FEED_WAITERS = 1
    visible(api, 1)
    settings.EVENT_FEED_WAITERS = 0
    page = api.get(FEED, {"wait": 5}).json()
    assert [entry["event"]["id"] for entry in page["data"]] == [event.id]
