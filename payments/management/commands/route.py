"""`manage.py route set|remove|list`: a merchant's live routes (docs/methods.md "Routing"),
as the merchant's admin page edits them. Every route is checked by Route.full_clean, so the
same rules hold here and in the admin: the catalogue, the connector, and the connector's own
(a Stripe route names an active connector account of the merchant or the platform)."""

import json

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from accounts.management.commands._change import ChangeCommand
from accounts.models import Merchant
from payments.models import Route


def as_dict(route: Route) -> dict:
    return {
        "merchant": route.merchant_id,
        "method": route.method_type,
        "currency": route.currency,
        "connector": route.connector,
        "account": route.account or None,
    }


def line(route: Route) -> str:
    account = f" ({route.account})" if route.account else ""
    return (
        f"{route.merchant_id}  {route.method_type} {route.currency} -> {route.connector}{account}"
    )


def problems_text(invalid: ValidationError) -> str:
    return "; ".join(f"{field}: {' '.join(errors)}" for field, errors in invalid)


class Command(ChangeCommand):
    failed = "The routes were not changed: run the command again"
    help = "Set, remove or list a merchant's live routes (method, currency -> connector)."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True)
        set_ = actions.add_parser("set", help="route a method and currency (replaces its route)")
        remove = actions.add_parser("remove", help="remove a route: it answers no_route")
        listing = actions.add_parser("list", help="the routes, of one merchant or of all")
        for sub in (set_, remove):
            sub.add_argument("--merchant", required=True, help="mch_ id")
            sub.add_argument("--method", required=True, help="a wire method name, e.g. card")
            sub.add_argument("--currency", required=True, type=str.lower)
        set_.add_argument("--connector", required=True, help="a name in PAYMENT_CONNECTORS")
        set_.add_argument("--account", default="", help="cacct_ id, if the connector takes one")
        listing.add_argument("--merchant", help="mch_ id")
        for sub in (set_, remove, listing):
            sub.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *args, action, as_json, **options):
        routes = getattr(self, f"do_{action}")(**options)
        if as_json:
            shown = [as_dict(route) for route in routes]
            self.stdout.write(json.dumps(shown if action == "list" else shown[0]))
        else:
            done = {"set": "Set ", "remove": "Removed ", "list": ""}[action]
            self.stdout.write("\n".join(done + line(route) for route in routes) or "No route.")

    def do_set(self, *, merchant, method, currency, connector, account, **options):
        found = merchant_named(merchant)
        route = Route.objects.filter(merchant=found, method_type=method, currency=currency).first()
        route = route or Route(merchant=found, method_type=method, currency=currency)
        route.connector, route.account = connector, account
        try:
            route.full_clean()
        except ValidationError as invalid:
            raise CommandError(f"Route not set: {problems_text(invalid)}") from None
        route.save()
        return [route]

    def do_remove(self, *, merchant, method, currency, **options):
        route = Route.objects.filter(
            merchant=merchant_named(merchant), method_type=method, currency=currency
        ).first()
        if route is None:
            raise CommandError(f"No route of {merchant} for {method} in {currency}.")
        route.delete()
        return [route]

    def do_list(self, *, merchant, **options):
        routes = Route.objects.order_by("merchant_id", "method_type", "currency")
        if merchant:
            routes = routes.filter(merchant=merchant_named(merchant))
        return list(routes)


def merchant_named(merchant_id: str) -> Merchant:
    merchant = Merchant.objects.filter(pk=merchant_id).first()
    if merchant is None:
        raise CommandError(f"No merchant {merchant_id}.")
    return merchant
