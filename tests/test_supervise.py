"""scripts/supervise.py, the wrapper `make run` puts around every Procfile process, on real
processes: a killed one is named and started again, one that cannot start ends the stack, and a
stop is passed on without a restart."""

import signal
import subprocess
import sys
import threading

from tests.e2e.processes import ROOT, wait_for

SUPERVISE = [sys.executable, str(ROOT / "scripts" / "supervise.py"), "--first-delay", "0.05"]
# Prints its pid, then waits to be killed.
SLEEPER = [sys.executable, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(60)"]


class Supervised:
    """The supervisor over `command`, its output collected line by line."""

    def __init__(self, *args: str):
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [*SUPERVISE, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    def pids(self) -> list[int]:
        return [int(line) for line in self.lines if line.strip().isdigit()]

    def said(self, text: str) -> int:
        return sum(text in line for line in self.lines)


def test_a_killed_process_is_named_and_started_again():
    supervised = Supervised("worker", *SLEEPER)
    try:
        wait_for(lambda: len(supervised.pids()) == 1)
        first = supervised.pids()[0]
        subprocess.run(["kill", "-KILL", str(first)], check=True)
        wait_for(lambda: len(supervised.pids()) == 2)
        assert supervised.said("supervise: worker: EXITED unexpectedly") == 1
        assert supervised.said(f"(pid {first}, signal SIGKILL); restarting in 0.05 s") == 1
        assert supervised.process.poll() is None
    finally:
        supervised.process.kill()
        supervised.process.wait(10)
        for pid in supervised.pids():
            subprocess.run(["kill", "-KILL", str(pid)], check=False)


def test_a_process_that_cannot_start_ends_the_stack_with_its_status():
    supervised = Supervised("--give-up-after", "3", "beat", sys.executable, "-c", "exit(3)")
    assert supervised.process.wait(30) == 3
    wait_for(lambda: supervised.said("giving up"))
    assert supervised.said("supervise: beat: EXITED unexpectedly") == 2
    assert supervised.said("supervise: beat: EXITED with exit status 3 (3 quick crashes") == 1


def test_a_stop_is_passed_on_and_not_restarted():
    supervised = Supervised("web", *SLEEPER)
    wait_for(lambda: len(supervised.pids()) == 1)
    supervised.process.send_signal(signal.SIGTERM)
    assert supervised.process.wait(30) == 0
    wait_for(lambda: not _alive(supervised.pids()[0]))
    assert supervised.said("EXITED") == 0 and len(supervised.pids()) == 1


def _alive(pid: int) -> bool:
    return subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode == 0
