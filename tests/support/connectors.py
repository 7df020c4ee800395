"""Stand-ins for live processors, for routing and refund tests. Only tests name them in
PAYMENT_CONNECTORS."""

import datetime

from payments.connectors import Authorisation, Connector, RefundAnswer, Result


class ApprovingConnector(Connector):
    """Approves whatever it is sent."""

    def supports(self, *, method, currency) -> bool:
        return method.serves(currency)

    def authorise(self, *, payment, token) -> Authorisation:
        return Authorisation(result=Result.APPROVED, outcome={"response_code": "00"}, details={})


class SlowRefundsConnector(ApprovingConnector):
    """A processor whose refunds stay pending however often it is asked."""

    def refund(self, *, payment, refund) -> RefundAnswer:
        return RefundAnswer("pending", resolve_after=datetime.timedelta(seconds=30))

    resolve_refund = refund
