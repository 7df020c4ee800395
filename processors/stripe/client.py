"""A StripeClient per connector account: its secret key, its API address (Stripe's own, or
an emulator's), our deadline, and the library's own retries off (ours are made with the same
Idempotency-Key, by the connector and the runner).

One client per account and credentials, kept for the process: its HTTP sessions (one per
thread, the library's RequestsClient) keep their connections open, so a payment's calls do
not each pay a new connection (a TLS handshake at Stripe) and the key is decrypted once.
A rotation changes the stored (encrypted) key, and so the client."""

import functools
import threading
import time

import requests
import stripe
from django.conf import settings

from api.errors import ApiFailure
from payments.connectors import ConnectorInDoubt
from processors.models import ConnectorAccount
from webhooks.crypto import decrypt_secret

CLIENTS_KEPT = 64  # accounts a process talks to; an evicted one is only made again
RATE_LIMIT_BACKOFF = 0.5  # seconds, doubled per retry of Stripe's 429


def stripe_client(account: ConnectorAccount) -> stripe.StripeClient:
    return _client(account.secret_key_encrypted, account.api_base, settings.STRIPE_TIMEOUT_SECONDS)


@functools.lru_cache(maxsize=CLIENTS_KEPT)
def _client(secret_key_encrypted: str, api_base: str, timeout: float) -> stripe.StripeClient:
    address = api_base.rstrip("/") if api_base else stripe.DEFAULT_API_BASE
    http = stripe.RequestsClient(
        timeout=timeout,
        session=ThreadSessions(),
        proxy=requests.utils.get_environ_proxies(address) or None,
    )
    return stripe.StripeClient(
        decrypt_secret(secret_key_encrypted),
        base_addresses={"api": address},
        http_client=http,
        max_network_retries=0,
    )


class ThreadSessions:
    """The `session` a RequestsClient calls: each thread its own requests.Session (as the
    library's default), one that does not read the environment on every call (`trust_env`:
    every proxy variable, NO_PROXY and ~/.netrc, ~0.1 ms a call with 35 variables). The
    proxies the environment names for the account's address are read once, with the client."""

    def __init__(self):
        self._local = threading.local()

    def request(self, *args, **kwargs) -> requests.Response:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
            session.trust_env = False
        return session.request(*args, **kwargs)


def call(method, *args, **kwargs):
    """One Stripe call in our errors: its 429 retried with backoff (the library's own retries
    are off), then a 502 (Stripe did not act); unreachable, timed out or 5xx: in doubt (it
    may have acted); its refusal of our keys or of the call: a 502 that names the cause; a
    card error or an invalid request stays Stripe's exception, for the caller to read.
    -> the answer as plain dicts."""
    for attempt in range(settings.STRIPE_RATE_LIMIT_RETRIES + 1):
        try:
            return method(*args, **kwargs).to_dict()
        except stripe.RateLimitError:
            if attempt == settings.STRIPE_RATE_LIMIT_RETRIES:
                raise unusable("The processor is rate limiting us; retry shortly.") from None
            time.sleep(RATE_LIMIT_BACKOFF * 2**attempt)
        except (stripe.APIConnectionError, stripe.APIError) as exc:
            raise ConnectorInDoubt(
                f"The processor could not be heard ({type(exc).__name__}); retry with the same "
                "Idempotency-Key."
            ) from None
        except (stripe.AuthenticationError, stripe.PermissionError):
            raise unusable("The processor refused this account's credentials.") from None
        except (stripe.CardError, stripe.InvalidRequestError):
            raise  # its answer about this request: the caller's to read
        except stripe.StripeError as exc:  # refused before acting (e.g. an idempotency clash)
            raise unusable(f"The processor refused the call: {reason(exc)}.") from None
    raise AssertionError("unreachable")


def unusable(message: str) -> ApiFailure:
    """The processor refused us before acting (not in doubt): 502, nothing to ask again."""
    error = ApiFailure(message, code="connector_http_error")
    error.status = 502
    return error


def reason(exc: stripe.StripeError) -> str:
    """Stripe's words for a refusal, never its whole error (it can echo request data)."""
    return exc.code or type(exc).__name__
