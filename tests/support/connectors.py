"""A stand-in for a live processor, for routing tests: it approves whatever it is sent. Only
tests name it in PAYMENT_CONNECTORS."""

from payments.connectors import Authorisation, Connector, Result


class ApprovingConnector(Connector):
    def supports(self, *, method, currency) -> bool:
        return method.serves(currency)

    def authorise(self, *, payment, token) -> Authorisation:
        return Authorisation(result=Result.APPROVED, outcome={"response_code": "00"}, details={})
