"""The connector interface: how payments talks to whatever authorises a card.

payments knows only this interface. Implementations are named in a setting,
`PAYMENT_CONNECTORS = {"test": "<dotted path>", "<name>": "<dotted path>", ...}`, so the
sandbox's simulator plugs in from above without payments importing it (ARCHITECTURE.md
"Rooms"). Test mode always goes to `"test"`; live mode goes to the connector the merchant's
route for the method and currency names (payments.models.Route; docs/methods.md "Routing").
"""

import datetime
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache

from django.conf import settings
from django.utils.module_loading import import_string

from api.errors import ApiFailure, ProcessingFailed
from payments.methods import Method, get_method
from payments.models import TEST_CONNECTOR, Route


class Result(StrEnum):
    APPROVED = "approved"
    DECLINED = "declined"
    FAILED = "failed"
    REQUIRES_ACTION = "requires_action"
    PROCESSING = "processing"


@dataclass(frozen=True)
class Authorization:
    """A connector's answer to an authorisation attempt, in terms the status machine knows."""

    result: Result
    outcome: dict = field(default_factory=dict)  # keys of Payment.outcome; missing ones stay null
    redirect_url: str | None = None  # with REQUIRES_ACTION: where the payer is sent
    resolve_after: datetime.timedelta | None = None  # with PROCESSING: when to ask again
    details: dict | None = None  # method.details for methods paid without a token
    card: dict | None = None  # what the processor says of the card: merged into method.card


@dataclass(frozen=True)
class Refusal:
    """A capture or void the processor refused (the payment keeps its status)."""

    reason: str


@dataclass(frozen=True)
class RefundAnswer:
    """A connector's answer to a refund: `succeeded`, `failed` (with a failure code), or
    `pending` (ask again after `resolve_after`). Statuses are the refund's wire values."""

    status: str
    failure_code: str | None = None
    resolve_after: datetime.timedelta | None = None


class ConnectorInDoubt(ApiFailure):
    """The processor could not be heard (a timeout, a dropped connection, a 5xx) after it may
    have acted: the operation stays `started`, the token stays spent, and a retry with the
    same Idempotency-Key or beat's recovery asks again with the same key (payments.runner).
    Raised instead of a plain ServiceError whenever a call may have moved money."""

    status, default_code = 502, "connector_http_error"


class Connector:
    """Implementations answer for one mode. Each call may raise a ServiceError (for example
    `connector_http_error`) to say the processor could not be asked; nothing is then written.
    `payment` is the Payment row (unsaved during create: its id is already assigned).

    `key` is the operation's id (payments.models.Operation), the processor's idempotency key:
    asked again with the same key (recovery after a crash), a connector must give the same
    answer and must not act twice. No transaction is open and no lock held during a call.
    """

    def supports(self, *, method: Method, currency: str) -> bool:
        raise NotImplementedError

    def route_problems(self, route) -> dict[str, str]:
        """A live route (payments.models.Route) naming this connector, checked on save:
        {field: problem}. A connector that needs an account says which ones fit."""
        if route.account:
            return {"account": "This connector takes no account."}
        return {}

    def authorize(self, *, payment, token, key: str) -> Authorization:
        """`token` is None for the methods paid without one (docs/methods.md)."""
        raise NotImplementedError

    def complete_action(self, *, payment, details: dict, key: str) -> Authorization:
        """The payer came back from the challenge or redirect; `details` says what happened."""
        raise NotImplementedError

    def resolve(self, *, payment, key: str) -> Authorization:
        """A processing payment is due: the settled outcome."""
        raise NotImplementedError

    def capture(self, *, payment, amount: int, key: str) -> Refusal | None:
        raise NotImplementedError

    def void(self, *, payment, key: str) -> Refusal | None:
        raise NotImplementedError

    def refund(self, *, payment, refund, key: str) -> RefundAnswer:
        """Send `refund` (a refunds.Refund row, unsaved, id assigned) against `payment`."""
        raise NotImplementedError

    def resolve_refund(self, *, payment, refund, key: str) -> RefundAnswer:
        """A pending refund is due: its settled answer (`succeeded` or `failed`)."""
        raise NotImplementedError


@cache
def _load(path: str) -> Connector:
    return import_string(path)()


def live_connector(name: str) -> Connector:
    """A configured connector by its name in PAYMENT_CONNECTORS."""
    return _load(settings.PAYMENT_CONNECTORS[name])


def _connector_named(name: str | None) -> Connector | None:
    path = settings.PAYMENT_CONNECTORS.get(name) if name else None
    return _load(path) if path else None


def _live_connector_name(*, merchant_id: str, method: Method, currency: str) -> str | None:
    routes = Route.objects.filter(merchant_id=merchant_id, method_type=method.name)
    name = routes.filter(currency=currency).values_list("connector", flat=True).first()
    return None if name == TEST_CONNECTOR else name  # live keys never reach the simulator


def connector_of(payment) -> Connector:
    """The connector that serves a payment (its method, currency and mode), or 422 `no_route`.
    Looked up once per payment object: a request asks for it at its check, its operation's
    start and its call, and a live route is a query."""
    if CONNECTOR_ATTRIBUTE not in payment.__dict__:
        payment.__dict__[CONNECTOR_ATTRIBUTE] = route(
            merchant_id=payment.merchant_id,
            livemode=payment.livemode,
            method=get_method(payment.method_type),
            currency=payment.currency,
        )
    return payment.__dict__[CONNECTOR_ATTRIBUTE]


CONNECTOR_ATTRIBUTE = "_connector"


def route(*, merchant_id: str, livemode: bool, method: Method, currency: str) -> Connector:
    """The connector that serves this method and currency, or 422 `no_route`."""
    name = TEST_CONNECTOR
    if livemode:
        name = _live_connector_name(merchant_id=merchant_id, method=method, currency=currency)
    connector = _connector_named(name)
    if connector is None or not connector.supports(method=method, currency=currency):
        mode = "live" if livemode else "test"
        raise ProcessingFailed(
            f"No connector serves {method.name} in {currency} in {mode} mode on this account.",
            code="no_route",
        )
    return connector
