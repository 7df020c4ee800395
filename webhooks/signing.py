"""`Service-Signature: t=<unix>,v1=<hex>[,v1=<hex>]` (spec "Signature").

The HMAC key is the whole secret string as shown to the merchant, `svc_whsec_` prefix included
(decisions.md "Webhook signature key"), so any verifier of the `t=,v1=` scheme accepts it.
"""

import datetime
import hashlib
import hmac

from webhooks.crypto import decrypt_secret
from webhooks.models import WebhookEndpoint


def sign(secret: str, timestamp: int, body: bytes) -> str:
    signed_payload = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed_payload, hashlib.sha256).hexdigest()


def active_secrets(endpoint: WebhookEndpoint, now: datetime.datetime) -> list[str]:
    """The current secret, then the previous one while its 24-hour overlap lasts."""
    secrets = [decrypt_secret(endpoint.secret_encrypted)]
    expires = endpoint.previous_secret_expires_at
    if endpoint.previous_secret_encrypted and expires is not None and now < expires:
        secrets.append(decrypt_secret(endpoint.previous_secret_encrypted))
    return secrets


def signature_header(secrets: list[str], timestamp: int, body: bytes) -> str:
    return ",".join([f"t={timestamp}", *(f"v1={sign(s, timestamp, body)}" for s in secrets)])
