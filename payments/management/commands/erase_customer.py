import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from payments.erasure import customer_erase, payments_of_customer


class Command(BaseCommand):
    help = (
        "Erase one customer's personal data (email, name, phone, address, wallet payer "
        "account) from a merchant's payments, keeping ids, amounts and statuses; recorded in "
        "the admin's history. "
        "Dry run that lists the payments unless --for-real is given."
    )

    def add_arguments(self, parser):
        parser.add_argument("--merchant", required=True, help="the merchant's mch_ id")
        parser.add_argument("--customer", help="the customer's cus_ id")
        parser.add_argument("--email", help="the customer's email (any case)")
        parser.add_argument(
            "--payment", help="a pay_ id: that payment (a customer with neither id nor email)"
        )
        parser.add_argument(
            "--operator", required=True, help="username of the staff user handling the request"
        )
        parser.add_argument("--for-real", action="store_true", help="actually erase")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )

    def handle(
        self, *args, merchant, customer, email, payment, operator, for_real, as_json, **options
    ):
        if not customer and not email and not payment:
            raise CommandError("Name the customer with --customer, --email or --payment.")
        staff = get_user_model().objects.filter(username=operator, is_staff=True).first()
        if staff is None:
            raise CommandError(f"No staff user {operator!r}.")
        found = dict(merchant_id=merchant, customer_id=customer, email=email, payment_id=payment)
        if for_real:
            ids = customer_erase(**found, operator=staff)
        else:
            ids = list(payments_of_customer(**found).values_list("pk", flat=True))
        if as_json:
            self.stdout.write(
                json.dumps({"payments": ids, "erased": for_real, "dry_run": not for_real})
            )
            return
        for payment_id in ids:
            self.stdout.write(payment_id)
        verb = (
            "Erased the customer's data from"
            if for_real
            else "Would erase the customer's data from"
        )
        suffix = "" if for_real else " Run again with --for-real to do it."
        self.stdout.write(f"{verb} {len(ids)} payment(s).{suffix}")
