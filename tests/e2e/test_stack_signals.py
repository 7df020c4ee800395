"""The harness that starts `make run` and `make serve` (tests/e2e/stack.py) stops them with
Ctrl-C whatever signal dispositions the suite inherited (issue 38 item 5: `make test` run as a
background job of a non-interactive shell ignores SIGINT, and so did every process it
started, so `make serve` ignored the test's Ctrl-C and the test failed)."""

import signal
import sys

from tests.e2e.processes import ROOT, wait_for
from tests.e2e.stack import Collected

WAITS_FOR_CTRL_C = "import sys, time; print('up', flush=True); time.sleep(120)"


def test_a_started_command_stops_on_ctrl_c_though_the_suite_ignores_it():
    inherited = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a background job has it
    try:
        command = Collected([sys.executable, "-c", WAITS_FOR_CTRL_C], ROOT, env={})
    finally:
        signal.signal(signal.SIGINT, inherited)
    try:
        wait_for(lambda: command.lines == ["up\n"], timeout=30)
        command.process.send_signal(signal.SIGINT)
        status = command.process.wait(30)  # ignored, it would sleep on: a timeout here
    finally:
        command.process.kill()
    assert status == -signal.SIGINT, command.output()  # Python re-raises it to exit by it
