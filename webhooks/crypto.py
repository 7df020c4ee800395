"""Webhook signing secrets: generated, encrypted at rest, and decrypted only to sign.

Encryption is Fernet (AES-128-CBC + HMAC-SHA256). The keys come from settings
(`WEBHOOK_ENCRYPTION_KEYS`, newest first: the first encrypts, every one decrypts, so a key can be
rotated); with none set, one key is derived from DJANGO_SECRET_KEY (docs/webhooks.md).
"""

import base64
import hashlib
import secrets
import string
from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

from api.replay import UnreadableStoredResponse

SECRET_PREFIX = "svc_whsec_"
SECRET_LENGTH = 32  # base62 characters after the prefix (decisions.md "Neutral names")
_BASE62 = string.digits + string.ascii_letters


def new_signing_secret() -> str:
    return SECRET_PREFIX + "".join(secrets.choice(_BASE62) for _ in range(SECRET_LENGTH))


def derived_key(secret_key: str) -> bytes:
    """A Fernet key bound to Django's SECRET_KEY and to this one purpose."""
    digest = hashlib.sha256(b"svc webhook secrets\x00" + secret_key.encode()).digest()
    return base64.urlsafe_b64encode(digest)


@cache
def _fernet(keys: tuple[str, ...], secret_key: str) -> MultiFernet:
    materials = [key.encode() for key in keys] or [derived_key(secret_key)]
    return MultiFernet([Fernet(material) for material in materials])


def _cipher() -> MultiFernet:
    return _fernet(tuple(settings.WEBHOOK_ENCRYPTION_KEYS), settings.SECRET_KEY)


def encrypt_secret(secret: str) -> str:
    return _cipher().encrypt(secret.encode()).decode()


class UnreadableSecret(Exception):
    """A stored secret that none of the configured keys decrypts: a key was dropped from
    WEBHOOK_ENCRYPTION_KEYS, or DJANGO_SECRET_KEY changed while they were unset."""


def decrypt_secret(token: str) -> str:
    try:
        return _cipher().decrypt(token.encode()).decode()
    except InvalidToken:
        raise UnreadableSecret from None


def keys_derived_from_secret_key() -> bool:
    return not settings.WEBHOOK_ENCRYPTION_KEYS


class StoredResponses:
    """api.replay.BodyCipher for the endpoint views whose responses show the secret
    (create, roll-secret): the body kept for a replay is encrypted like the secret itself."""

    def encrypt(self, data: bytes) -> bytes:
        return _cipher().encrypt(data)

    def decrypt(self, data: bytes) -> bytes:
        try:
            return _cipher().decrypt(data)
        except InvalidToken:
            raise UnreadableStoredResponse from None
