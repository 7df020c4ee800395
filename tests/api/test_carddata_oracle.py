"""The card-number scan and the redactor (api/carddata.py) against the implementation they
replaced, kept below as the oracle: the new one checks every candidate window's Luhn sum at
once instead of one window at a time (issue 12), and must find and redact exactly what the
old one did, on texts mixing digit groups, separators, letters and full-width digits."""

import json
import re

from hypothesis import find, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from api.carddata import CardDataFound, _card_field_in_object, _decode, _Object, find_card_data
from api.cardnumbers import ASCII_EQUIVALENTS, REDACTED, first_card_number_at, redact

# --- the oracle: api/carddata.py as of 377f1c2, one Python step per window ------------------
# (its separators since issue 20: line breaks too, and the lookalikes ASCII_EQUIVALENTS maps;
# since issue 35: `,`, `+` and `:`)

_SEP = r"(?:[-./_,+:\n]|\r\n?+|[ \t]{1,4}+)"
_EDGE = r"(?![0-9A-Za-z])"


def _layouts(n: int) -> str:
    sep = rf"(?P=s{n})"
    fifth = rf"(?:{sep}(?P<fifth{n}>[0-9]{{1,3}}+){_EDGE})?"
    fours = rf"[0-9]{{4}}{sep}[0-9]{{4}}{sep}[0-9]{{1,4}}+{fifth}"
    return rf"[0-9]{{4}}(?P<s{n}>{_SEP})(?:{fours}|[0-9]{{6}}{sep}[0-9]{{4,5}}+)"


_RUN_STARTS_HERE = (
    r"(?<![0-9][-./_,+:\t \n\r])(?<![0-9]\r\n)"
    r"(?<![0-9][ \t]{2})(?<![0-9][ \t]{3})(?<![0-9][ \t]{4})"
)
_RUN_ENDS_HERE = r"(?![-./_,+:\n\r][0-9])(?!\r\n[0-9])(?![ \t]{1,4}+[0-9])"
OLD_CARD_SHAPED = re.compile(
    rf"""(?<![0-9A-Za-z])(?=[0-9]{{4}})
    (?=(?P<card>
        [0-9]{{13,19}}+{_EDGE}
      | {_RUN_STARTS_HERE}{_layouts(1)}{_EDGE}
      | {_layouts(2)}{_EDGE}{_RUN_ENDS_HERE}
    ))""",
    re.VERBOSE,
)
_DOUBLED = bytes.maketrans(b"0123456789", b"0246813579")


def _comparable(text: str) -> str:
    return text if text.isascii() else text.translate(ASCII_EQUIVALENTS)


def _numbers_in(card, lead_separator, lead_fifth, trail_separator, trail_fifth):
    separator, fifth = lead_separator or trail_separator, lead_fifth or trail_fifth
    digits = card.replace(separator, "") if separator else card
    return (digits, digits[: -len(fifth)]) if fifth else (digits,)


def old_luhn_valid(digits: str) -> bool:
    encoded = digits.encode("ascii")
    doubled = encoded[-2::-2].translate(_DOUBLED)
    return (sum(encoded[-1::-2]) + sum(doubled) - 48 * len(encoded)) % 10 == 0


def old_first_card_number_at(text: str) -> int | None:
    """(Its `contains_card_number`, made to tell where the first card number starts.)"""
    if len(text) < 13:
        return None
    for window in OLD_CARD_SHAPED.finditer(_comparable(text)):
        if any(old_luhn_valid(number) for number in _numbers_in(*window.groups())):
            return window.start("card")
    return None


def old_contains_card_number(text: str) -> bool:
    return old_first_card_number_at(text) is not None


def old_redact(text: str) -> str:
    pieces, kept_until = [], 0
    for window in OLD_CARD_SHAPED.finditer(_comparable(text)):
        start, end = window.span("card")
        if start >= kept_until:
            pieces += [text[kept_until:start], REDACTED]
        kept_until = max(kept_until, end)
    return "".join(pieces) + text[kept_until:] if pieces else text


# --- texts: runs of digit groups with one separator, card numbers laid out in them ----------

DIGITS = "0123456789"
FULL_WIDTH = str.maketrans(DIGITS, "０１２３４５６７８９")
SEPARATORS = [" ", "\t", "  ", " \t", "    ", "     ", "-", ".", "/", "_"]
SEPARATORS += ["\u00a0", "\u202f", "－", "．", ";", ",", "+", ":", "，"]  # NFKC ones, others
SEPARATORS += ["\n", "\r\n", "\r", "\u2028", "\u2014", "\u2212", "\u00ad", "\u200b"]  # issue 20
LAYOUTS = [(4, 4, 4, 4), (4, 4, 4, 1), (4, 4, 4, 3), (4, 4, 4, 4, 2), (4, 4, 4, 4, 3)]
LAYOUTS += [(4, 6, 5), (4, 6, 4), (13,), (16,), (19,), (4, 4, 4, 4, 4), (4, 4, 4, 4, 1, 2)]


def luhn_completed(digits: str, valid: bool) -> str:
    return next(digits + last for last in DIGITS if old_luhn_valid(digits + last) == valid)


@st.composite
def card_like(draw, separator: str) -> str:
    """A number in a card layout (or one close to it), passing Luhn or failing it."""
    layout = draw(st.sampled_from(LAYOUTS))
    body = draw(st.text(DIGITS, min_size=sum(layout) - 1, max_size=sum(layout) - 1))
    number = luhn_completed(body, valid=draw(st.booleans()))
    groups, start = [], 0
    for size in layout:
        groups.append(number[start : start + size])
        start += size
    return separator.join(groups)


@st.composite
def runs(draw) -> str:
    """Digit groups joined by one separator: short groups, card-like numbers, both."""
    separator = draw(st.sampled_from(SEPARATORS))
    group = st.text(DIGITS, min_size=1, max_size=6) | card_like(separator)
    run = separator.join(draw(st.lists(group, min_size=1, max_size=6)))
    return run.translate(FULL_WIDTH) if draw(st.integers(0, 5)) == 0 else run


TEXTS = st.lists(
    runs()
    | st.sampled_from(SEPARATORS + ["\n", " ", "\t"])
    | st.text("abxZ\u00e9", min_size=1, max_size=3)
    | st.text(DIGITS + "０４２", min_size=1, max_size=20),
    max_size=12,
).map("".join)
PROPERTY = hypothesis_settings(max_examples=400, deadline=None, database=None)


@PROPERTY
@given(TEXTS)
def test_the_first_card_number_is_where_the_old_implementation_finds_it(text):
    assert first_card_number_at(text) == old_first_card_number_at(text)


@PROPERTY
@given(TEXTS)
def test_redact_agrees_with_the_old_implementation(text):
    assert redact(text) == old_redact(text)


def redacted_but_not_a_card(text: str) -> bool:
    return old_redact(text) != text and not old_contains_card_number(text)


def test_the_texts_hold_cards_and_redacted_near_misses():
    """The properties above compare something: the texts hold cards, and card-shaped
    numbers that fail Luhn (found by neither, redacted by both)."""
    find(TEXTS, old_contains_card_number, settings=PROPERTY)
    find(TEXTS, redacted_but_not_a_card, settings=PROPERTY)


# --- the guard's text scan against a walk that checks every string on its own ---------------

ESCAPED = st.sampled_from(["\n", "\r", "\x01", '"', "\\", "\b", "\t"])  # JSON escapes these
STRINGS = st.lists(TEXTS | ESCAPED | st.tuples(ESCAPED, card_like(" ")).map("".join), max_size=3)
KEYS = st.sampled_from(["note", "ref", "cvc", "exp", "card_code", "items", "a\n4242"])
NUMBERS = (
    st.integers(-(10**19), 10**19)
    | card_like("").map(int)
    | card_like("").map(float)  # `4242424242424242.0` holds one; a 19-digit one is `4.2e+18`
    | st.floats()  # NaN and Infinity too: the walk reads them as strings, in the count
)
DOCUMENTS = st.recursive(
    STRINGS.map("".join) | NUMBERS | st.none() | st.booleans(),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(KEYS | STRINGS.map("".join), children, max_size=4)
    ),
    max_leaves=12,
)


def walked(raw: bytes):
    """What the guard found before it checked strings in one pass (377f1c2): the document
    walked in order, the key-name rules of each object, then each key and string on its own."""
    return _walked(_decode(raw.decode()), ())


def _walked(node, path: tuple):
    if isinstance(node, _Object):
        found = _card_field_in_object(node, path)
        for key, value in [] if found else node:
            if old_contains_card_number(key):
                return CardDataFound("card number", ".".join(map(str, path)) or None)
            if found := _walked(value, path + (key,)):
                return found
        return found
    if isinstance(node, list):
        return next(filter(None, (_walked(v, path + (i,)) for i, v in enumerate(node))), None)
    if isinstance(node, str) and old_contains_card_number(node):
        return CardDataFound("card number", ".".join(map(str, path)) or None)
    return None


@PROPERTY
@given(DOCUMENTS, st.booleans())
def test_the_guard_finds_what_a_walk_of_every_string_finds(document, ascii_only):
    """The guard checks strings one by one only when its scan of the text found a card
    number: so the text scan (escapes decoded) must find every number the walk would."""
    raw = json.dumps(document, ensure_ascii=ascii_only).encode()
    assert find_card_data(raw) == walked(raw)


def test_the_documents_hold_cards_after_escapes():
    def card_after_an_escape(document) -> bool:
        raw = json.dumps(document).encode()
        return walked(raw) is not None and re.search(rb"\\[nrbu\"][0-9]", raw) is not None

    find(DOCUMENTS, card_after_an_escape, settings=PROPERTY)
