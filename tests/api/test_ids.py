import re

from api.ids import new_id, new_ulid


def test_id_shape():
    assert re.match(r"^pay_[0-9A-HJKMNP-TV-Z]{26}$", new_id("pay"))


def test_ids_sort_in_creation_order_even_within_a_millisecond():
    ids = [new_ulid() for _ in range(5000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_ids_sort_by_time_across_milliseconds(time_machine):
    time_machine.move_to("2026-01-01T00:00:00Z", tick=False)
    earlier = new_ulid()
    time_machine.move_to("2026-01-01T00:00:01Z", tick=False)
    assert new_ulid() > earlier
