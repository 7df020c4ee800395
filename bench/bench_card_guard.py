"""The raw-card guard on bodies of up to 256 KiB, as a request meets it: the request-shape limit
(api.parsers.refuse_overcomplex_body), then the guard (api.carddata.find_card_data). Typical
bodies and ones built to be the worst case, each against a floor measured in the same run (a
plain `json.loads` of the same body, or of a JSON string of it when the body is not JSON).

Usage: .venv/bin/python bench/bench_card_guard.py [--repeat N]
"""

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "true")

from api.carddata import find_card_data  # noqa: E402
from api.cardnumbers import luhn_valid  # noqa: E402
from api.errors import ValidationFailed  # noqa: E402
from api.parsers import MAX_BODY_CONTAINERS, refuse_overcomplex_body  # noqa: E402

SIZE = 256 * 1024


def repeated(piece: str, prefix: str = "", suffix: str = "") -> bytes:
    """`piece` repeated to fill SIZE bytes between `prefix` and `suffix`."""
    room = SIZE - len((prefix + suffix).encode())
    return (prefix + piece * (room // len(piece.encode())) + suffix).encode()


def json_list(items: list) -> bytes:
    """`items`, cycled, in a JSON list of at most SIZE bytes."""
    parts, size = [], 2
    for value in itertools.cycle(items):
        text = json.dumps(value)
        if size + len(text) + 2 > SIZE:
            return ("[" + ", ".join(parts) + "]").encode()
        parts.append(text)
        size += len(text) + 2


def json_list_ending(items: list, last) -> bytes:
    """`items`, cycled, in a JSON list of at most SIZE bytes whose last item is `last`."""
    room = SIZE - len(json.dumps(last)) - 2
    head = json_list(items)[: room - 1].rpartition(b", ")[0]
    return head + b", " + json.dumps(last).encode() + b"]"


def failing_luhn(digits: str) -> str:
    """An order number: card-like digits whose last one is not the Luhn check digit."""
    return next(digits[:-1] + last for last in "0123456789" if not luhn_valid(digits[:-1] + last))


def escaped(text: str) -> str:
    return "".join(f"\\u{ord(char):04x}" for char in text)


def order(index: int) -> dict:
    return {
        "id": f"pay_01JD8Z4ZQ0W9N7Y3XK2M5R{index:06d}",
        "amount": 1999 + index,
        "currency": "eur",
        "reference": f"INV-2026-{index:04d}",
        "order_number": failing_luhn(str(4242424242424240 + index * 10)),
        "created": "2026-11-21T05:47:26Z",
        "description": "Two tickets, row 12, seats 4-5; call +372 5123 4567 before 18:00",
        "metadata": {"sku": f"SKU-{index}", "qty": "2", "note": "gift wrap, ribbon 2.5 m"},
    }


def nested(depth: int) -> str:
    return "[" * depth + '"4242 4242 4242 4241"' + "]" * depth


def largest_payment() -> bytes:
    """The largest valid payment (docs/request-safety.md): 50 metadata values of 500
    four-byte characters, ~110 KB."""
    metadata = {f"key_{index:02d}": "\U0001f4b3" * 500 for index in range(50)}
    payment = {"amount": 1999, "currency": "eur", "payment_method": {"token": "tok_" + "x" * 26}}
    return json.dumps({**payment, "metadata": metadata}, ensure_ascii=False).encode()


# Orders as objects with metadata: as many as the shape limit lets a body hold.
ORDERS_WITHIN_THE_LIMIT = (MAX_BODY_CONTAINERS - 1) // 2

BODIES = {
    "typical: the largest valid payment": largest_payment(),
    "typical: orders (JSON objects)": json.dumps(
        [order(index) for index in range(ORDERS_WITHIN_THE_LIMIT)]
    ).encode(),
    "typical: prose, no digits": repeated("The quick brown fox jumps over the lazy dog. "),
    "worst: 1-1-1-... (issue 12), raw": repeated("1-"),
    "worst: 1-1-1-... in a JSON string": repeated("1-", '{"note": "', '"}'),
    "worst: near-miss cards, one long run": repeated("4242 4242 4242 4241 ", '"', '"'),
    "worst: near-miss cards, short runs": repeated("4242 4242 4242 4241;", '"', '"'),
    "worst: near-miss cards, 5 groups": repeated("4242.4242.4242.4241.12;", '"', '"'),
    "worst: ungrouped near-misses as numbers": json_list([4242424242424241]),
    "worst: separator chains (4 blanks)": repeated("4242    4242    4242    4241    ", '"', '"'),
    "worst: \\u0034 escapes": repeated(escaped("4242 4242 4242 4241;"), '"', '"'),
    "worst: full-width digits": repeated("４２４２－４２４２－４２４２－４２４１ ", '"', '"'),
    "worst: nested JSON": repeated(nested(500) + ",", "[", "0]"),
    # bodies of many objects or arrays are refused by the shape limit before the guard; those
    # just within it are decoded and walked when the text holds a key hint or a card
    "worst: nested JSON and a key hint": repeated(nested(500) + ",", '[{"cvc": null},', "0]"),
    "worst: empty objects and a card": repeated("{},", "[", '"4242424242424242"]'),
    "worst: objects with expiry-like keys": json_list([{"expires_at": "2030-01-01", "n": 1}]),
    "worst: at the limit, objects with expiry-like keys": json_list(
        [{"expires_at": "2030-01-01", "n": 1, "note": "x" * 230}] * (MAX_BODY_CONTAINERS - 1)
    ),
    "worst: at the limit, nested 900 deep": repeated(
        "4242424242424241,", "[" * 900 + '{"cvc": null, "n": "', '"}' + "]" * 900
    ),
    "worst: at the limit, a card after 900 levels": repeated(
        "4242424242424241,", "[" * 900 + '{"n": "', '4242424242424242"}' + "]" * 900
    ),
    # a key an expiry or security code could be under makes the guard walk the document,
    # scanning every string on its own
    "worst: walked, ungrouped near-misses": json_list([{"cvc": None}] + [4242424242424241] * 99),
    "worst: walked, near-misses, 5 groups": json_list(
        [{"exp": None}] + ["4242.4242.4242.4241.12"] * 99
    ),
    "worst: tiny values and escapes": json_list(["\n"] + [1] * 1000),
    "worst: walked, tiny values": json_list([{"cvc": None}] + [1] * 1000),
    # a card number found in the text makes the guard walk to name its field, checking
    # every string it passes on the way on its own: the card is last
    "worst: a card after near-misses, 5 groups": json_list_ending(
        ["4242.4242.4242.4241.12"], "4242.4242.4242.4242.12"
    ),
    "worst: a card after ungrouped near-misses": json_list_ending(
        [4242424242424241], 4242424242424242
    ),
    "worst: a card after tiny values": json_list_ending([1], "4242424242424242"),
    # escapes make the guard decode the body and scan its strings as decoded
    "worst: a card after 5-group near-misses, escaped": json_list_ending(
        ["4242.4242.4242.4241.12\n"], "4242.4242.4242.4242.12"
    ),
    "worst: near-miss cards, 5 groups, no-break spaces": repeated(
        "4242\u00a04242\u00a04242\u00a04241\u00a012;", '"', '"'
    ),
    "worst: near-miss cards, 5 groups, narrow no-break spaces": repeated(
        "4242\u202f4242\u202f4242\u202f4241\u202f12;", '"', '"'
    ),
    # separators added for issue 20: line breaks (raw, and escaped in a JSON string, which
    # makes the guard decode the body), dashes and zero-width spaces
    "worst: near-miss cards, 5 groups, CRLF line breaks": repeated(
        "4242\r\n4242\r\n4242\r\n4241\r\n12;", '"', '"'
    ),
    "worst: near-miss cards, 5 groups, escaped line breaks": repeated(
        "4242\\n4242\\n4242\\n4241\\n12;", '"', '"'
    ),
    "worst: near-miss cards, 5 groups, em dashes": repeated(
        "4242\u20144242\u20144242\u20144241\u201412;", '"', '"'
    ),
    "worst: near-miss cards, 5 groups, zero-width spaces": repeated(
        "4242\u200b4242\u200b4242\u200b4241\u200b12;", '"', '"'
    ),
}


def screened(body: bytes) -> str:
    """What a request's body meets before its view (api.views.ServiceAPIView.initial): the
    shape limit, then the guard; the outcome, as the error code or what the guard found."""
    try:
        refuse_overcomplex_body(body)
    except ValidationFailed as refused:
        return refused.code
    found = find_card_data(body)
    return found.what if found else "passed"


def timed(call, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.process_time()
        call()
        times.append(time.process_time() - started)
    return times


def floor_of(body: bytes):
    """A plain json.loads of the body, or of the body as one JSON string when it is not JSON:
    the least any reader of it pays."""
    try:
        json.loads(body)
        return lambda: json.loads(body)
    except (ValueError, RecursionError):
        as_string = json.dumps(body.decode())
        return lambda: json.loads(as_string)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args, _ = parser.parse_known_args()  # bench/run.sh passes every script the same args
    print(
        f"guard on bodies of up to {SIZE} B: CPU ms (process time), best and median of "
        f"{args.repeat} runs"
    )
    print(f"{'body':50} {'best':>7} {'median':>7} {'floor':>7} {'ratio':>7}  result")
    worst = 0.0
    for name, body in BODIES.items():
        guard = timed(lambda body=body: screened(body), args.repeat)
        floor = timed(floor_of(body), args.repeat)
        best, floor_best = min(guard), min(floor)
        worst = max(worst, best)
        result = screened(body)
        print(
            f"{name:50} {best * 1e3:7.2f} {statistics.median(guard) * 1e3:7.2f} "
            f"{floor_best * 1e3:7.2f} {best / floor_best:7.1f}  {result}"
        )
    print(f"worst best-of-{args.repeat}: {worst * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
