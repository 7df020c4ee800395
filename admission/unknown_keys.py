"""One bound for the whole fleet on made-up keys looked up in the database (docs/admission.md
"Made-up keys from many addresses").

Each address's bucket bounds what one address may try; a flood from thousands of addresses,
each under its own limit, still cost a key query each. So every well-formed key the database
did not hold also takes a token from one bucket (`unknown-keys`, fleet-wide in Redis). While a
process knows it empty, a key that the key filter (accounts.keyfilter) shows to be no stored
key is refused 401 in step 2 of the pipeline, before the URL is resolved and without a query
for it; a real key is always in the filter, so it is looked up and served as ever.
"""

from django.conf import settings

from admission import buckets, store

BUCKET = "unknown-keys"


def count_unknown_key() -> None:
    """A well-formed key no row holds was just looked up: one token of the fleet's bucket."""
    limits = settings.API_UNKNOWN_KEY_RATE_LIMIT
    try:
        buckets.take_token(BUCKET, rate=limits["rate"], burst=limits["burst"])
    except store.STORE_UNAVAILABLE as error:
        store.warn_failing_open("unknown-key bound", error)


def flooding() -> bool:
    """This process knows the fleet's bucket of unknown keys to be empty (no round trip)."""
    return buckets.known_empty_for(BUCKET) > 0
