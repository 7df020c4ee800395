"""The raw-card detector and the redactor (api/carddata.py; rules in docs/request-safety.md)."""

import json
import unicodedata

import pytest

from api.carddata import find_card_data
from api.cardnumbers import ASCII_EQUIVALENTS, INVISIBLE, luhn_valid, redact

VISA = "4242424242424242"
AMEX = "378282246310005"  # 15 digits
DINERS_14 = "30569309025904"
VISA_13 = "4222222222222"
UNIONPAY_19 = "6200000000000000000"


def found(body) -> tuple[str, str | None] | None:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    result = find_card_data(raw)
    return (result.what, result.param) if result else None


@pytest.mark.parametrize("number", [VISA, AMEX, DINERS_14, VISA_13, UNIONPAY_19])
def test_luhn_accepts_real_test_numbers(number):
    assert luhn_valid(number)


@pytest.mark.parametrize(
    "text",
    [
        VISA,
        "4242 4242 4242 4242",
        "4242-4242-4242-4242",
        "3782 822463 10005",
        f"my card is {VISA}, thanks",
        f"qty 2 {VISA}",  # a number beside the card does not hide it
        f"{VISA} 0000",
        "4242-4242-4242-4242 7",
        "2026-11 4242 4242 4242 4242",
        f"INV-{VISA}",
        VISA_13,
        UNIONPAY_19,
        # one separator throughout: space, tab, several spaces, dash, dot, slash, underscore
        "4242.4242.4242.4242",
        "4242/4242/4242/4242",
        "4242_4242_4242_4242",
        "4242  4242  4242  4242",
        "4242\t4242\t4242\t4242",
        "3782.822463.10005",
        "ref 4242.4242.4242.4242 ok",
        "4242 4242 4242 4242 123",  # a card, then its security code
        "4242 4242 4242 4242 1230 123",
        # what NFKC makes ASCII: full-width digits and dashes, no-break and thin spaces
        "４２４２４２４２４２４２４２４２",
        "４２４２－４２４２－４２４２－４２４２",
        "4242\u00a04242\u00a04242\u00a04242",
        "4242\u202f4242\u202f4242\u202f4242",
        # issue 20: line breaks, invisible separators, dashes NFKC keeps, line separators
        "4242\n4242\n4242\n4242",
        "4242\r\n4242\r\n4242\r\n4242",
        "4242\r4242\r4242\r4242",
        "card:\n4242\n4242\n4242\n4242\nthanks",
        "3782\n822463\n10005",
        "4242\u200b4242\u200b4242\u200b4242",
        "4242\u00ad4242\u00ad4242\u00ad4242",
        "4242\u20104242\u20104242\u20104242",
        "4242\u20134242\u20134242\u20134242",
        "4242\u20144242\u20144242\u20144242",
        "4242\u22124242\u22124242\u22124242",
        "4242\u20284242\u20284242\u20284242",
        "4242\u20294242\u20294242\u20294242",
        # issue 35: a comma, a plus (a form-encoded space) and a colon
        "4242,4242,4242,4242",
        "4242+4242+4242+4242",
        "4242:4242:4242:4242",
        "3782,822463,10005",
        "card 4242:4242:4242:4242:123",
        "４２４２，４２４２，４２４２，４２４２",
        "4242\ufe504242\ufe504242\ufe504242",  # a small comma
    ],
)
def test_card_numbers_in_strings_are_found(text):
    assert found({"metadata": {"note": text}}) == ("card number", "metadata.note")


@pytest.mark.parametrize(
    "text",
    [
        "4242424242424241",  # 16 digits, fails Luhn: an order number
        "INV-2026-0001",
        "pay_01JD8Z4ZQ0W9N7Y3XK2M5R6T8V",
        "42424242424242424242",  # 20 digits in one group is not a card
        "424242424242",  # 12 digits
        "+372 5123 4567",
        "2026-11-21T05:47:26Z",
        "ab4242424242424242cd",  # glued to letters: part of a hex id
        "٤٢٤٢٤٢٤٢٤٢٤٢٤٢٤٢",  # Arabic-Indic digits: NFKC keeps them, they are not ASCII
        "INV-2026-0001 834502",  # 14 digits passing Luhn, but not written as one number
        "4242.4242-4242.4242",  # two kinds of separator: not one number
        "4242 4242  4242 4242",
        "1.2.3.4.5.6.7.8.9.1.2.3.4.5",  # no card layout: a version, a list
        "10/12/14/16/18/20/22/24",
        "2026.11.21 12.30.00",
        "192.168.100.200, 10.100.200.255",
        "ab4242424242424242",  # glued to a letter on one side: part of an id
        "4242424242424242cd",
        "4242\n4242-4242\n4242",  # two kinds of separator, line breaks included
        "4242,4242:4242+4242",
        "12:30:45, 1,234,567.89, +44 20 7946 0958",
        # Accepted misses (docs/request-safety.md): 5 blanks or more are column alignment,
        # and a line break followed by indentation is two separators.
        "4242     4242     4242     4242",
        "4242\n  4242\n  4242\n  4242",
    ],
)
def test_ordinary_strings_pass(text):
    assert found({"metadata": {"note": text}}) is None


@pytest.mark.parametrize("amount", [100, 999_999_999_999, 2**53 - 1])
def test_amounts_pass(amount):
    assert found({"amount": amount, "currency": "eur"}) is None


def test_card_number_as_a_json_number_is_found():
    assert found(b'{"payment_method": {"number": 4242424242424242}}') == (
        "card number",
        "payment_method.number",
    )


def test_escaped_digits_are_decoded_before_scanning():
    escaped = "".join(f"\\u00{ord(digit):x}" for digit in VISA)
    raw = ('{"metadata": {"note": "' + escaped + '"}}').encode()
    assert VISA.encode() not in raw
    assert found(raw) == ("card number", "metadata.note")


def test_list_indexes_are_in_the_param():
    body = {"items": [{"ref": "a"}, {"ref": "b", "notes": ["ok", f"card {VISA}"]}]}
    assert found(body) == ("card number", "items.1.notes.1")


def test_card_number_in_a_key_names_the_object_not_the_key():
    assert found({"metadata": {VISA: "x"}}) == ("card number", "metadata")


def test_duplicate_keys_are_all_scanned():
    raw = b'{"note": "4242424242424242", "note": "fine"}'
    assert found(raw) == ("card number", "note")


def test_body_that_is_not_json_is_scanned_raw():
    assert found(f"number={VISA}&cvc=123".encode()) == ("card number", None)
    assert found(b"number=4242+4242+4242+4242&cvc=123") == ("card number", None)  # issue 35


def test_invalid_utf8_does_not_hide_a_card():
    assert found(b'{"n": "\xff' + VISA.encode() + b'"}') == ("card number", "n")


@pytest.mark.parametrize(
    "body, param",
    [
        ({"exp_month": 12, "exp_year": 2030}, "exp_month"),
        ({"card": {"expMonth": "12", "expYear": "30"}}, "card.expMonth"),
        ({"a": [{"expiry_month": 1, "expiry_year": 2031}]}, "a.0.expiry_month"),
        ({"payment_method": {"expiry": "12/30"}}, "payment_method.expiry"),
        ({"exp": "07-2031"}, "exp"),
        ({"expiration_date": "1230"}, "expiration_date"),
    ],
)
def test_expiry_pairs_are_found(body, param):
    assert found(body) == ("card expiry", param)


@pytest.mark.parametrize(
    "body",
    [
        {"exp_month": 12},  # one half is not a pair
        {"exp_month": None, "exp_year": 2030},
        {"card": {"exp_month": 12}, "exp_year": 2030},  # not in one object
        {"expiry": "2026-12-31"},  # a date, not a month/year
        {"metadata": {"month": 12, "year": 2030}},
    ],
)
def test_things_that_are_not_an_expiry_pass(body):
    assert found(body) is None


@pytest.mark.parametrize(
    "body, param",
    [
        ({"payment_method": {"cvc": "123"}}, "payment_method.cvc"),
        ({"CVV": 1234}, "CVV"),
        ({"x": [{"security_code": " 999 "}]}, "x.0.security_code"),
        ({"card": {"cvc2": "000"}}, "card.cvc2"),
    ],
)
def test_security_codes_are_found(body, param):
    assert found(body) == ("security code", param)


@pytest.mark.parametrize(
    "body",
    [{"cvc": None}, {"cvc": ""}, {"cvc_check": "123"}, {"cvc": "12345"}, {"cvc": "pass"}],
)
def test_things_that_are_not_a_security_code_pass(body):
    assert found(body) is None


def test_deep_nesting_does_not_crash_the_scan():
    raw = b"[" * 5000 + b"]" * 5000
    assert found(raw) is None


@pytest.mark.parametrize(
    "inner, what, param",
    [
        (b'{"cvc": "123"}', "security code", "0." * 700 + "cvc"),
        (b'{"n": ["a", "ok ' + VISA.encode() + b'"]}', "card number", "0." * 700 + "n.1"),
    ],
)
def test_card_data_nested_as_deep_as_json_decodes_is_named(inner, what, param):
    """The walk is a loop, not recursion, with one path list for every level: it goes
    wherever the decoder went, at the same cost per level."""
    assert found(b"[" * 700 + inner + b"]" * 700) == (what, param)


def test_the_first_card_number_in_document_order_is_named_after_escapes():
    """The scan tells which token holds the first card number: an escaped one earlier in the
    body comes before a plain one later, and a key before its value."""
    escaped = "".join(f"\\u00{ord(digit):x}" for digit in VISA)
    raw = ('{"a": {"b": "' + escaped + '"}, "c": "' + VISA + '"}').encode()
    assert found(raw) == ("card number", "a.b")
    assert found({"x": {"y": [1, {VISA: VISA}]}}) == ("card number", "x.y.1")


def test_number_literals_and_constants_are_counted_as_tokens():
    raw = b'{"a": [1.5, NaN, -Infinity, 12, "x"], "b": 4242424242424242.0}'
    assert found(raw) == ("card number", "b")


@pytest.mark.parametrize(
    "text, expected",
    [
        (f"card {VISA} ok", "card [redacted] ok"),
        ("4242 4242 4242 4241", "[redacted]"),  # card-shaped is enough in a log
        ("x4242424242424242", None),  # glued to a letter: the guard's rule, a hex id
        ("ref=4242.4242.4242.4242", "ref=[redacted]"),
        ("/v1/payments?reference=4242_4242_4242_4242", "/v1/payments?reference=[redacted]"),
        ("４２４２ ４２４２ ４２４２ ４２４２!", "[redacted]!"),
        ("4242 4242 4242 4242 4242", "[redacted]"),
        ("4242\t4242\t4242\t4241", "[redacted]"),
        ("INV-2026-0001 pay_01JD8Z4ZQ0W9N7Y3XK2M5R6T8V 12:30", None),
    ],
)
def test_redact(text, expected):
    assert redact(text) == (expected or text)


def test_every_character_nfkc_makes_an_ascii_digit_or_separator_is_mapped():
    expected = {}
    for code in range(0x80, 0x110000):
        form = unicodedata.normalize("NFKC", chr(code))
        if len(form) == 1 and form in "0123456789 \t-./_,+:":
            expected[code] = form
        elif unicodedata.category(chr(code)) == "Pd" or chr(code) in "\u2212" + INVISIBLE:
            expected[code] = "-"  # every dash, and the separators that show nothing
        elif chr(code) in "\u0085\u2028\u2029":
            expected[code] = "\n"
    assert ASCII_EQUIVALENTS == expected


@pytest.mark.parametrize("escaped", [False, True])
@pytest.mark.parametrize(
    "separator",
    ["\n", "\r\n", "\u200b", "\u00ad", "\u2010", "\u2014", "\u2212", "\u2028", "\ufeff"],
)
def test_the_issue_20_separators_are_found_and_redacted_alike(separator, escaped):
    note = separator.join(["4242", "4242", "4242", "4242"])
    raw = json.dumps({"payment_method": {"note": note}}, ensure_ascii=escaped).encode()
    assert found(raw) == ("card number", "payment_method.note")
    assert redact(f"note: {note}.") == "note: [redacted]."  # one rule for guard and logs


@pytest.mark.parametrize(
    "body, param",
    [
        (b'{"card": {"c-v-c": "123"}}', "card.c-v-c"),  # separators inside the key name
        (b'{"\\u0063vc": "123"}', "cvc"),  # the key written as escapes
        (b'{"n": "4242\\t4242\\t4242\\t4242"}', "n"),  # tabs as JSON escapes
        (b'{"n": "4242\\/4242\\/4242\\/4242"}', "n"),
        (b'{"n": "\\uff14\\uff12\\uff14\\uff12424242424242 4242"}', "n"),
        # After an escaped control character or quote: the decoded text is not re-escaped
        # (`n4242...` would be glued to a letter); no key hint makes the guard walk here.
        (b'{"note": "hello\\n4242 4242 4242 4242"}', "note"),
        (b'{"note": "line\\r\\n4242424242424242"}', "note"),
        (b'{"note": "\\u00014242 4242 4242 4242"}', "note"),
        (b'{"note": "say \\"4242 4242 4242 4242\\""}', "note"),
        (b'{"note": "a\\\\4242 4242 4242 4242"}', "note"),
        (b'{"note": "\\b4242 4242 4242 4242\\f"}', "note"),
    ],
)
def test_escaped_and_spelled_out_forms_are_found(body, param):
    assert found(body)[1] == param
