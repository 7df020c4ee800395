"""Run one Procfile process and restart it when it dies (docs/operations.md "Supervision").

usage: supervise.py [--first-delay S] [--max-delay S] [--give-up-after N] NAME COMMAND [ARG...]

honcho (`make run`) stops every process as soon as one exits, so one crashed worker would take
the whole stack down. Under this wrapper an unexpected exit is logged loudly, naming the process
and its exit status, and the process is started again after a delay that doubles on each quick
crash (1 s, 2 s, ... up to 30 s) and resets once it has stayed up for a minute. A process that
crashes quickly `--give-up-after` times in a row (5) cannot start at all (a missing module, a
wrong setting): the wrapper then exits with its status, and honcho stops the stack saying which.
SIGTERM and SIGINT (Ctrl-C, honcho stopping) are passed on to the process, which is then not
restarted.
"""

import argparse
import signal
import subprocess
import sys
import threading
import time

STABLE_AFTER = 60.0  # seconds up after which a crash is not counted as a quick one


def log(name: str, message: str) -> None:
    print(f"supervise: {name}: {message}", file=sys.stderr, flush=True)


def describe(returncode: int) -> str:
    if returncode < 0:
        return f"signal {signal.Signals(-returncode).name}"
    return f"exit status {returncode}"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first-delay", type=float, default=1.0)
    parser.add_argument("--max-delay", type=float, default=30.0)
    parser.add_argument("--give-up-after", type=int, default=5)
    parser.add_argument("name")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    stopping = threading.Event()
    child: subprocess.Popen | None = None

    def stop(signum, _frame):
        stopping.set()
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    quick_crashes, delay = 0, args.first_delay
    while True:
        started = time.monotonic()
        child = subprocess.Popen(args.command)
        returncode = child.wait()
        if stopping.is_set():
            return 0 if returncode in (0, -signal.SIGTERM, -signal.SIGINT) else returncode
        if time.monotonic() - started >= STABLE_AFTER:
            quick_crashes, delay = 0, args.first_delay
        quick_crashes += 1
        if quick_crashes >= args.give_up_after:
            log(
                args.name,
                f"EXITED with {describe(returncode)} ({quick_crashes} quick crashes in a row);"
                " giving up, which stops the stack",
            )
            return returncode if returncode > 0 else 1
        log(
            args.name,
            f"EXITED unexpectedly (pid {child.pid}, {describe(returncode)});"
            f" restarting in {delay:g} s",
        )
        if stopping.wait(delay):
            return 0
        delay = min(delay * 2, args.max_delay)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
