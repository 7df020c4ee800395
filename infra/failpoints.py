"""Failpoints: named places on the request path where a test can make the process die (or a
call fail), to prove what a retry then gets (docs/request-safety.md "Idempotency keys").

Nothing is armed outside tests: `reach(name)` is a dict lookup that finds nothing. A test arms
a point with `armed(name, failure)`: an exception (a BaseException no handler of ours catches,
for a kill) is raised each time the point is reached until disarmed; a function is called
(to do something else right there, such as a retry).
"""

from collections.abc import Callable
from contextlib import contextmanager

CLAIMED = "claimed"  # the key is claimed (a create's: to be, by step 1); nothing else happened
OPERATION_STARTED = "operation_started"  # step 1 committed: token spent, operation recorded
CONNECTOR_ANSWERED = "connector_answered"  # the processor acted; nothing of it is written
WORK_COMMITTED = "work_committed"  # step 3 committed (with its stored answer, if any)
RESPONSE_STORING = "response_storing"  # a response stored after the view, about to be
RELEASING = "releasing"  # about to release the key after a 5xx or a crash (a database drop)

Failure = BaseException | type[BaseException] | Callable[[], object]
_armed: dict[str, Failure] = {}


def reach(name: str) -> None:
    failure = _armed.get(name)
    if failure is None:
        return
    if isinstance(failure, BaseException) or (
        isinstance(failure, type) and issubclass(failure, BaseException)
    ):
        raise failure
    failure()


@contextmanager
def armed(name: str, failure: Failure):
    _armed[name] = failure
    try:
        yield
    finally:
        _armed.pop(name, None)
