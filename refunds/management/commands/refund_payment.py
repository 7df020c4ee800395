import json

from django.core.management.base import BaseCommand, CommandError

from api.errors import ServiceError
from payments.models import Payment
from refunds.services import refund_create


class Command(BaseCommand):
    help = (
        "Refund a payment (all that remains, or --amount in minor units) through the same "
        "service as POST /v1/payments/:id/refunds. Dry run unless --for-real is given."
    )

    def add_arguments(self, parser):
        parser.add_argument("payment_id", help="pay_ id")
        parser.add_argument("--amount", type=int, help="minor units; default: all that remains")
        parser.add_argument("--reason", help="kept on the refund")
        parser.add_argument("--for-real", action="store_true", help="actually refund it")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )

    def handle(self, *args, payment_id, amount, reason, for_real, as_json, **options):
        payment = Payment.objects.filter(pk=payment_id).first()
        if payment is None:
            raise CommandError(f"No payment {payment_id}.")
        unrefunded = payment.amount_captured - payment.amount_refunded
        result = {"payment": payment.id, "dry_run": not for_real, "refund": None}
        if for_real:
            try:
                refund = refund_create(payment=payment, amount=amount, reason=reason)
            except ServiceError as refused:
                raise CommandError(f"{refused.code}: {refused.message}") from refused
            result["refund"] = {"id": refund.id, "amount": refund.amount, "status": refund.status}
        if as_json:
            self.stdout.write(json.dumps(result))
        elif for_real:
            made = result["refund"]
            self.stdout.write(f"Refund {made['id']} of {made['amount']}: {made['status']}.")
        else:
            self.stdout.write(
                f"Would refund {amount or unrefunded} {payment.currency} of {payment} "
                f"({unrefunded} captured and not refunded). Run again with --for-real to do it."
            )
