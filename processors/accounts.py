"""Which connector account serves what: a route names one (payments.models.Route.account)."""

from api.errors import ProcessingFailed
from payments.models import Route
from processors.models import ConnectorAccount


def account_problems(route: Route, processor: str) -> dict[str, str]:
    """What is wrong with the account a live route names, for a connector of `processor`."""
    if not route.account:
        return {"account": "Name the connector account (cacct_ id) whose keys serve this route."}
    account = ConnectorAccount.objects.filter(pk=route.account, processor=processor).first()
    if account is None:
        return {"account": f"No {processor} connector account {route.account!r}."}
    if not account.active:
        return {"account": "This connector account is revoked."}
    if account.merchant_id not in (None, route.merchant_id):
        return {"account": "This connector account belongs to another merchant."}
    return {}


def routed_account(*, merchant_id: str, method_type: str, currency: str) -> ConnectorAccount:
    """The account the merchant's live route for the method and currency names, or 422
    `no_route`: no such route, or one whose account cannot serve (revoked, say) until the
    route names another."""
    route = Route.objects.filter(
        merchant_id=merchant_id, method_type=method_type, currency=currency
    ).first()
    if route is None or account_problems(route, ConnectorAccount.Processor.STRIPE):
        raise ProcessingFailed(
            f"No connector account serves {method_type} in {currency} in live mode on this "
            "account.",
            code="no_route",
        )
    return ConnectorAccount.objects.get(pk=route.account)
