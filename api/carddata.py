"""Finding raw card data in a request body (spec "Common rules" 2).

The rules are written out in docs/request-safety.md ("Raw-card guard"); in short:
- a card number as api.cardnumbers finds it, in any key, string or number literal;
- an expiry is one object holding both an expiry-month and an expiry-year key, or one
  expiry key whose value reads as a month/year (`12/30`, `12-2030`, `1230`);
- a security code is a `cvc`-like key whose value is 3 or 4 ASCII digits.
One scan of the body's text settles most bodies; only one holding a card number or a key
hint is decoded and walked, to name the field.
"""

import json
import re
from bisect import bisect_left
from dataclasses import dataclass
from itertools import chain, compress, count, repeat
from operator import itemgetter

from api.cardnumbers import first_card_number_at
from api.errors import ValidationFailed

EXPIRY_MONTH_KEYS = frozenset({"expmonth", "expirymonth", "expirationmonth", "cardexpmonth"})
EXPIRY_YEAR_KEYS = frozenset({"expyear", "expiryyear", "expirationyear", "cardexpyear"})
EXPIRY_KEYS = frozenset(
    {"exp", "expiry", "expiration", "expdate", "expirydate", "expirationdate", "cardexpiry"}
)
SECURITY_CODE_KEYS = frozenset(
    {"cvc", "cvv", "cvc2", "cvv2", "cvn", "csc", "securitycode", "cardsecuritycode", "cardcvc"}
    | {"cardcvv", "cardcode", "cardverificationcode", "cardverificationvalue"}
)
EXPIRY_VALUE = re.compile(r"(0?[1-9]|1[0-2]) ?[/-] ?([0-9]{2}|[0-9]{4})|(0[1-9]|1[0-2])[0-9]{2}")
SECURITY_CODE_VALUE = re.compile(r"[0-9]{3,4}")
# Every key above, once normalised, holds one of these words: a body whose text holds none
# (whatever separates their letters) has no expiry or security-code key to look for.
_KEY_HINT = re.compile(
    "|".join("[^a-z0-9]*+".join(word) for word in ("exp", "cv", "csc", "code", "verification"))
)


@dataclass(frozen=True)
class CardDataFound:
    what: str  # "card number", "card expiry", "security code"
    param: str | None  # dotted path of the field, None when the body is not JSON


class _Object(list):
    """A decoded JSON object as its (key, value) pairs, duplicates kept: a card number in a
    key that a later duplicate overrides is still in the body."""


def _decode(text: str):
    """JSON with number literals and constants kept as their text, so `4242...` as a number
    is read like a string; None when the body is not JSON (or nested too deep to decode)."""
    try:
        return json.loads(
            text, object_pairs_hook=_Object, parse_int=str, parse_float=str, parse_constant=str
        )
    except (ValueError, RecursionError):
        return None


def _normalised(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def _filled(value) -> bool:
    return value is not None and value != ""


def _card_field_in_object(pairs: _Object, path) -> CardDataFound | None:
    """Expiry and security-code rules, which are about key names."""
    named = [(_normalised(key), key, value) for key, value in pairs]
    months = [key for name, key, value in named if name in EXPIRY_MONTH_KEYS and _filled(value)]
    if months and any(name in EXPIRY_YEAR_KEYS and _filled(value) for name, _, value in named):
        return CardDataFound("card expiry", _dotted((*path, months[0])))
    for name, key, value in named:
        as_text = value.strip() if isinstance(value, str) else None
        if as_text is None:
            continue
        if name in EXPIRY_KEYS and EXPIRY_VALUE.fullmatch(as_text):
            return CardDataFound("card expiry", _dotted((*path, key)))
        if name in SECURITY_CODE_KEYS and SECURITY_CODE_VALUE.fullmatch(as_text):
            return CardDataFound("security code", _dotted((*path, key)))
    return None


def _dotted(path) -> str | None:
    return ".".join(str(part) for part in path) or None


_CONTAINERS = list  # a decoded object (`_Object`) is one too: one type is the cheaper check


class _Walk:
    """The first card data in a decoded body, in document order: each object's expiry and
    security-code keys (key-name rules) before its contents, and the key or string (number
    literals read as strings) numbered `card_token`, counting from 0 in document order, the
    one the text scan found a card number in (None: none holds one). A key names its object:
    the error never echoes the key.

    A loop over a stack of open containers, not recursion: a body nested as deep as the JSON
    decoder goes is walked too, and one path list is extended and shortened on the way, so a
    node costs the same at any depth (a tuple built per node cost ~400 ms for 500-deep
    lists). Within a container only its objects and arrays, and the token counted to, take a
    Python step (`_entries`)."""

    def __init__(self, card_token: int | None):
        self.path: list = []
        self.open: list = []  # per open container, the entries left to visit
        self.tokens_left = -1 if card_token is None else card_token

    def first_in(self, document) -> CardDataFound | None:
        if not isinstance(document, _CONTAINERS):
            return self._counted(document, None)
        found = self._entered(document)
        while self.open and not found:
            step, node = next(self.open[-1], (None, _DONE))
            if node is _DONE:
                self.open.pop()
                if self.open:  # the path holds a step per open container but the outermost
                    self.path.pop()
            elif isinstance(node, _CONTAINERS):
                self.path.append(step)
                found = self._entered(node)
            else:
                found = self._counted(node, step)
        return found

    def _entered(self, node) -> CardDataFound | None:
        """An object's key-name rules; then the container opened."""
        found = _card_field_in_object(node, self.path) if isinstance(node, _Object) else None
        if not found:
            self.open.append(self._entries(node))
        return found

    def _counted(self, token, step) -> CardDataFound | None:
        """A key (`step` None) or a value passed: the card number's if it is the token
        counted to."""
        if self.tokens_left < 0 or not isinstance(token, str):
            return None
        self.tokens_left -= 1
        if self.tokens_left >= 0:
            return None
        return CardDataFound(
            "card number", _dotted(self.path if step is None else (*self.path, step))
        )

    def _entries(self, container):
        """A container's entries worth a visit, as (step, node): its objects and arrays and,
        when a card number is counted to, the token counted to. C-level passes pick them,
        not a Python step per value."""
        in_object = isinstance(container, _Object)
        if self.tokens_left >= 0:
            return self._counting(
                list(chain.from_iterable(container)) if in_object else container, in_object
            )
        values = map(_VALUE, container) if in_object else container
        entries = container if in_object else enumerate(container)
        return compress(entries, map(isinstance, values, repeat(_CONTAINERS)))

    def _counting(self, tokens: list, in_object: bool):
        """`_entries` when counting: `tokens` are an object's keys and values in turn (a
        key's step None) or a list's values; the keys and strings before each object or
        array are counted in bulk, and the one counted to is an entry."""

        def step_of(index: int):
            if not in_object:
                return index
            return tokens[index - 1] if index % 2 else None

        strings = list(compress(count(), map(isinstance, tokens, repeat(str))))
        containers = compress(count(), map(isinstance, tokens, repeat(_CONTAINERS)))
        counted = 0  # of `strings`
        for end in chain(containers, [len(tokens)]):
            before = bisect_left(strings, end)  # strings before this container
            if self.tokens_left < before - counted:
                index = strings[counted + self.tokens_left]
                self.tokens_left = 0  # the next token counted is this one
                yield step_of(index), tokens[index]
                return
            self.tokens_left -= before - counted
            counted = before
            if end < len(tokens):
                yield step_of(end), tokens[end]


_VALUE = itemgetter(1)
_DONE = object()


# Every byte a space but those a number literal is written with (and the `e` of `true` and
# `false`, counted out below): a number is a run of them.
_NUMBER_BYTES = bytes(
    ord("d") if chr(byte) in "0123456789+-.eE" else ord(" ") for byte in range(256)
)


def _token_at(scanned: str, position: int) -> int:
    """The number, counting from 0 in document order, of the token (a key, string, number
    literal or constant, the ones the walk counts) holding `position`: counted in C-level
    passes, not a regular-expression match per token. In the texts scanned a `"` only ever
    delimits a string (`_scanned`), so the strings started are the quotes paired, and the
    numbers and constants are in the text between strings."""
    pieces = scanned[: position + 1].split('"')
    between_strings = " ".join(pieces[0::2]).encode("utf-8", "surrogatepass")
    numbers = (b" " + between_strings.translate(_NUMBER_BYTES)).count(b" d")
    numbers -= sum(map(between_strings.count, (b"true", b"false", b"-Infinity")))
    constants = between_strings.count(b"NaN") + between_strings.count(b"Infinity")
    return len(pieces) // 2 + numbers + constants - 1


def _scanned(text: str, document) -> str:
    """The text scanned for card numbers: the body as sent, or, when it was decoded for its
    escapes, its tokens decoded (`\\u0034\\u0032...` is the digits it is), each token a JSON
    string in document order, every `"` a delimiter (`_unescaped`)."""
    if document is _NOT_DECODED or document is None:
        return text
    try:
        return _unescaped(json.dumps(document, ensure_ascii=False))
    except RecursionError:
        return text


# What `json.dumps(ensure_ascii=False)` escapes again in a decoded string: a quote, a
# backslash and the control characters. Left escaped, `hello\n4242 4242 4242 4242` reads as
# `n4242...`, a group glued to a letter, and the card is missed (issue 12).
_REESCAPED_NOT_SEPARATORS = re.compile(r'\\(?:u00[0-9a-fA-F]{2}|[\\"bf])')


def _unescaped(dumped: str) -> str:
    """The re-escapes of line breaks and tabs as the separators they are, every other one
    as a NUL (a boundary, and no separator). One C-level pass each: the first consumes
    escaped backslashes, so the `\\n`, `\\r` and `\\t` left after it are those characters."""
    unescaped = _REESCAPED_NOT_SEPARATORS.sub("\x00", dumped)
    return unescaped.replace("\\n", "\n").replace("\\r", "\r").replace("\\t", "\t")


_NOT_DECODED = object()


def find_card_data(raw: bytes) -> CardDataFound | None:
    """The first card number, expiry or security code in a request body, or None.

    One linear scan of the text (its strings decoded when it holds escapes) settles most
    bodies: nothing card-shaped and no key an expiry or security code could be under. A body
    with either is decoded and walked to name the field; the scan tells which token holds the
    first card number, so no string is scanned twice. One that is not JSON (or too deeply
    nested to decode) is refused with no field named.
    """
    text = raw.decode("utf-8", errors="replace")
    document = _decode(text) if "\\" in text else _NOT_DECODED
    scanned = _scanned(text, document)
    card_at = first_card_number_at(scanned)
    if card_at is None and not _KEY_HINT.search(scanned.lower()):
        return None
    if document is _NOT_DECODED:
        document = _decode(text)
    if document is not None:
        card_token = None if card_at is None else _token_at(scanned, card_at)
        found = _Walk(card_token).first_in(document)
        if found or card_at is None:
            return found
    # Not JSON, or nested deeper than it decodes: what the scan found stands, unnamed.
    return CardDataFound("card number", None) if card_at is not None else None


def refuse_raw_card_data(raw: bytes) -> None:
    """400 `raw_card_data_not_allowed` naming the field (spec "Common rules" 2)."""
    found = find_card_data(raw)
    if found is not None:
        raise ValidationFailed(
            f"Request bodies must not contain raw card data (found a {found.what}). Collect "
            "card details with the tokenizer and send the token instead.",
            code="raw_card_data_not_allowed",
            param=found.param,
        )
