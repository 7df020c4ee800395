import datetime
import random
import re

from api.ids import CROCKFORD, _encode, id_floor, id_time, new_id, new_ulid


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


def test_an_id_floor_bounds_the_ids_made_from_that_moment():
    moment = datetime.datetime(2030, 1, 1, 12, 0, 0, 250_000, tzinfo=datetime.UTC)
    floor, next_floor = (
        id_floor("pay", moment),
        id_floor("pay", moment + datetime.timedelta(milliseconds=1)),
    )
    made = floor[:-16] + new_ulid()[10:]  # an id made during that millisecond
    assert floor <= made < next_floor
    assert id_time(made) == id_time(floor) == moment
    assert id_floor("pay", datetime.datetime(1969, 1, 1, tzinfo=datetime.UTC)) == "pay_" + "0" * 26


def test_the_encoding_is_crockfords_base32_of_the_low_bits():
    # The ULID specification's example: its time part encodes 1469918176385 ms.
    assert _encode(1469918176385, 10) == "01ARYZ6S41"
    for length in range(1, 28):  # odd and even lengths
        value = random.getrandbits(140)
        decoded = 0
        for char in _encode(value, length):
            decoded = decoded * 32 + CROCKFORD.index(char)
        assert decoded == value & ((1 << (5 * length)) - 1)
