"""API key material: generation, format and peppered hashing (decisions.md "Neutral names").

Secret keys are `svc_sk_{test|live}_` + 20 base62 characters (32 in all); publishable keys
`svc_pk_{test|live}_` + 14 (26 in all). Only HMAC-SHA256(pepper, key) is stored.
"""

import hashlib
import hmac
import re
import secrets
import string

from django.conf import settings

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
RANDOM_LENGTH = {"secret": 20, "publishable": 14}
_KIND_CODE = {"secret": "sk", "publishable": "pk"}
KEY_RE = re.compile(r"^svc_(?P<kind>sk|pk)_(?P<mode>test|live)_(?P<random>[0-9A-Za-z]+)$")


def key_prefix(kind: str, livemode: bool) -> str:
    return f"svc_{_KIND_CODE[kind]}_{'live' if livemode else 'test'}_"


def generate_key(kind: str, livemode: bool) -> str:
    random_part = "".join(secrets.choice(BASE62) for _ in range(RANDOM_LENGTH[kind]))
    return key_prefix(kind, livemode) + random_part


def is_well_formed(key: str) -> bool:
    match = KEY_RE.match(key)
    if not match:
        return False
    kind = "secret" if match["kind"] == "sk" else "publishable"
    return len(match["random"]) == RANDOM_LENGTH[kind]


def peppers() -> dict[int, str]:
    """Every pepper version a stored hash may use, the current one included."""
    old = {int(version): value for version, value in settings.API_KEY_OLD_PEPPERS.items()}
    return {**old, settings.API_KEY_PEPPER_VERSION: settings.API_KEY_PEPPER}


def hash_key(key: str, pepper: str) -> str:
    return hmac.new(pepper.encode(), key.encode(), hashlib.sha256).hexdigest()


def candidate_hashes(key: str) -> dict[str, int]:
    """hash -> pepper version, for one indexed `key_hash IN (...)` lookup."""
    return {hash_key(key, pepper): version for version, pepper in peppers().items()}
