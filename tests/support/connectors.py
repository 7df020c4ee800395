"""Stand-ins for live processors, for routing and refund tests. Only tests name them in
PAYMENT_CONNECTORS."""

import datetime

from django.db import transaction

from api.errors import ApiFailure, ProcessingFailed
from payments.connectors import Authorization, Connector, ConnectorInDoubt, RefundAnswer, Result
from sandbox.simulator import SimulatorConnector


class ApprovingConnector(Connector):
    """Approves whatever it is sent."""

    def supports(self, *, method, currency) -> bool:
        return method.serves(currency)

    def authorize(self, *, payment, token, key) -> Authorization:
        return Authorization(result=Result.APPROVED, outcome={"response_code": "00"}, details={})


class SlowRefundsConnector(ApprovingConnector):
    """A processor whose refunds stay pending however often it is asked."""

    def refund(self, *, payment, refund, key) -> RefundAnswer:
        return RefundAnswer("pending", resolve_after=datetime.timedelta(seconds=30))

    resolve_refund = refund


class Crash(BaseException):
    """The process dying at that point (not an error any handler of ours catches)."""


class RecordingSimulator(SimulatorConnector):
    """The simulator, noting each call (name, key, whether a transaction was open) in
    `calls`, and dying right after the processor answered the calls named in `crash_after`."""

    calls: list[tuple[str, str, bool]] = []
    crash_after: set[str] = set()


def _recorded(name: str):
    def call(self, **kwargs):
        answer = getattr(SimulatorConnector, name)(self, **kwargs)
        in_transaction = transaction.get_connection().in_atomic_block
        self.calls.append((name, kwargs["key"], in_transaction))
        if name in self.crash_after:
            raise Crash(name)
        return answer

    return call


for _name in ("authorize", "complete_action", "resolve", "capture", "void", "refund"):
    setattr(RecordingSimulator, _name, _recorded(_name))


def _unreachable(self, **kwargs):
    raise ApiFailure("The processor did not answer: nothing was processed.", code="connector_down")


class ResolveFailsSimulator(SimulatorConnector):
    """The simulator, except that a processing payment's resolution cannot be asked."""

    resolve = _unreachable


class ResolvingConnector(ApprovingConnector):
    """A live processor that settles processing payments as approved."""

    def resolve(self, *, payment, key) -> Authorization:
        return self.authorize(payment=payment, token=None, key=key)


class ResolveFailsConnector(ApprovingConnector):
    """A live processor that cannot be asked about processing payments."""

    resolve = _unreachable


class ResolveInDoubtConnector(ApprovingConnector):
    """A live processor that never answers in time about processing payments (a timeout after
    the request went out): the resolve stays `started` for recovery to ask again."""

    def resolve(self, *, payment, key) -> Authorization:
        raise ConnectorInDoubt("The processor did not answer in time.")


class SlowSimulator(SimulatorConnector):
    """The simulator, answering an authorization 2 s later on the test's frozen clock
    (`clock`: the time-machine fixture, set by the test)."""

    clock = None

    def authorize(self, **kwargs) -> Authorization:
        self.clock.shift(datetime.timedelta(seconds=2))
        return super().authorize(**kwargs)


class RefundResolveFailsSimulator(SimulatorConnector):
    """The simulator, except that a pending refund's settlement cannot be asked."""

    resolve_refund = _unreachable


class StillProcessingConnector(ApprovingConnector):
    """A live processor that has not settled a processing payment however often it is asked
    (an asynchronous debit takes days), answering as StripeConnector.resolve does then."""

    def resolve(self, *, payment, key) -> Authorization:
        raise ProcessingFailed(
            "The processor has not settled this payment yet.", code="payment_not_advanceable"
        )
