"""svc-forward: follow a merchant's test-mode event feed (GET /v1/events/feed) and POST each
event to a local URL, signed exactly as the service signs a webhook delivery, so the receiver's
verification code is the production one.

It loses nothing: the feed is read from a cursor kept on disk, written (atomically: a new file
renamed over the old) only after the local receiver answered 2xx for the event; a receiver
that fails or is down gets the same event again, with growing delays, until it takes it.
Killed at any moment, it resumes from the last event the receiver took. The one event it may
send twice is the one whose 2xx arrived as it was killed, before its cursor was written; it
carries the same `Idempotency-Key` (the event id) both times, as every webhook does. Stopped
(Ctrl-C, SIGTERM) while an event is on its way, it waits for that answer and writes the
cursor first, so a stop sends nothing twice; a second stop ends it at once.

The standard library only. The API key is read from the environment (SVC_API_KEY), never the
command line, which other users of the machine can read.
"""

import argparse
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import signal
import string
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

SECRET_PREFIX = "svc_whsec_"  # as the service's endpoint secrets (webhooks/crypto.py)
SECRET_LENGTH = 32
TEST_KEY_PREFIX = "svc_sk_test_"
USER_AGENT = "svc-forward/1.0"
FIRST_RETRY_DELAY = 0.25


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The service's `v1=`: hex HMAC-SHA256 of "<t>.<body>" under the whole secret string
    (webhooks/signing.py, spec "Signature")."""
    signed_payload = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed_payload, hashlib.sha256).hexdigest()


def delivery_headers(event: dict, secret: str, body: bytes, timestamp: int) -> dict:
    """The headers of a webhook delivery (webhooks/attempts.py delivery_headers)."""
    return {
        "Content-Type": "application/json; charset=utf-8",
        "Service-Signature": f"t={timestamp},v1={sign(secret, timestamp, body)}",
        "Service-Event-Id": event["id"],
        "Service-Event-Type": event["type"],
        "Idempotency-Key": event["id"],
        "User-Agent": USER_AGENT,
    }


def event_body(event: dict) -> bytes:
    """The service's JSON form of an event: compact, keys in order, non-ASCII as is."""
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()


def write_atomically(path: Path, text: str) -> None:
    """`path` holds `text` or what it held before, whenever the process dies."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a crash of the machine
    finally:
        os.close(directory)


class State:
    """The state directory: the signing secret, and a cursor per (API, key)."""

    def __init__(self, directory: Path, api: str, key: str):
        directory.mkdir(parents=True, exist_ok=True)
        scope = hashlib.sha256(f"{api}\n{key}".encode()).hexdigest()[:16]
        self.cursor_path = directory / f"cursor-{scope}"
        self.secret_path = directory / "secret"

    def cursor(self) -> str | None:
        try:
            return self.cursor_path.read_text(encoding="utf-8").strip() or None
        except FileNotFoundError:
            return None

    def save_cursor(self, cursor: str) -> None:
        write_atomically(self.cursor_path, cursor)

    def secret(self) -> str:
        """The secret signing the forwarded events: made once, then kept, so a receiver
        configured with it goes on verifying across restarts."""
        try:
            return self.secret_path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            alphabet = string.digits + string.ascii_letters
            secret = SECRET_PREFIX + "".join(secrets.choice(alphabet) for _ in range(SECRET_LENGTH))
            write_atomically(self.secret_path, secret)
            return secret


class Stop(Exception):
    """An answer retrying cannot mend (a revoked key, an expired cursor)."""


class Backoff:
    """Delays that double from FIRST_RETRY_DELAY up to `longest`, reset on success."""

    def __init__(self, longest: float):
        self.longest, self.delay = longest, FIRST_RETRY_DELAY

    def wait(self) -> float:
        waited = self.delay
        time.sleep(waited)
        self.delay = min(self.delay * 2, self.longest)
        return waited

    def reset(self) -> None:
        self.delay = FIRST_RETRY_DELAY


class Stopping:
    """Ctrl-C and SIGTERM. Outside `delivering()` the CLI stops at once: nothing is on its way
    to the receiver. Inside, the stop waits for the receiver's answer and, for a 2xx, the
    cursor written, so a stop sends nothing twice; a second stop ends it at once."""

    def __init__(self):
        self.in_flight = self.asked = False

    def install(self) -> None:
        signal.signal(signal.SIGINT, self.ask)
        signal.signal(signal.SIGTERM, self.ask)

    def ask(self, signum, frame) -> None:
        if not self.in_flight or self.asked:
            raise KeyboardInterrupt
        self.asked = True
        log("stopping once the receiver has answered this event (stop again: at once)")

    @contextlib.contextmanager
    def delivering(self):
        self.in_flight = True
        try:
            yield
        finally:
            self.in_flight = False
        if self.asked:
            raise KeyboardInterrupt


def read_page(api: str, key: str, after: str | None, wait: int, backoff: Backoff) -> dict:
    """One page of the feed; network failures, 429 and 5xx are retried."""
    query = {"limit": "100", "wait": str(wait), **({"after": after} if after else {})}
    request = urllib.request.Request(
        f"{api}/v1/events/feed?{urllib.parse.urlencode(query)}",
        headers={"Authorization": f"Bearer {key}", "User-Agent": USER_AGENT},
    )
    while True:
        try:
            with urllib.request.urlopen(request, timeout=wait + 30) as response:
                backoff.reset()
                return json.load(response)
        except urllib.error.HTTPError as error:
            if error.code != 429 and error.code < 500:
                raise Stop(f"the feed answered {error.code}: {error.read()[:500]!r}") from error
            problem = f"HTTP {error.code}"
        except (OSError, ValueError) as error:  # refused, reset, timed out, a cut body
            problem = str(error)
        log(f"feed: {problem}; retrying in {backoff.wait():.2f} s")


def post(event: dict, to: str, secret: str, timeout: float) -> int | str:
    """One try at delivering `event` to `to`, signed afresh (as a retried delivery is):
    -> the 2xx status, or what went wrong."""
    body = event_body(event)
    request = urllib.request.Request(
        to, data=body, headers=delivery_headers(event, secret, body, int(time.time()))
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as error:
        return str(error.code)
    except OSError as error:
        return str(error)


def forward(entry: dict, args, secret: str, state: State, stopping: Stopping, backoff) -> None:
    """`entry`'s event POSTed until the receiver answers 2xx, then its cursor written."""
    event = entry["event"]
    while True:
        with stopping.delivering():
            outcome = post(event, args.to, secret, args.timeout)
            if isinstance(outcome, int):
                state.save_cursor(entry["cursor"])  # only now: the receiver has it
        if isinstance(outcome, int):
            backoff.reset()
            log(f"{event['id']} {event['type']} -> {outcome}")
            return
        log(f"{event['id']} {event['type']} -> {outcome}; retrying in {backoff.wait():.2f} s")


def follow(args, key: str, state: State, secret: str, stopping: Stopping) -> None:
    feed_backoff, receiver_backoff = Backoff(args.max_retry_delay), Backoff(args.max_retry_delay)
    cursor = state.cursor()
    if cursor is None and not args.from_start:
        # The feed's end, stored before anything else: killed now, it resumes from there.
        cursor = read_page(args.api, key, "now", 0, feed_backoff)["next_cursor"]
        state.save_cursor(cursor)
    while True:
        page = read_page(args.api, key, cursor, args.wait, feed_backoff)
        for entry in page["data"]:
            forward(entry, args, secret, state, stopping, receiver_backoff)
            cursor = entry["cursor"]


def log(line: str) -> None:
    print(line, flush=True)


def parse_args(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="svc-forward",
        description="Forward test-mode events to a local URL, signed as webhooks are. "
        "The secret API key is read from SVC_API_KEY.",
    )
    parser.add_argument("--api", required=True, help="the service, e.g. http://127.0.0.1:8000")
    parser.add_argument("--to", required=True, help="the local receiver's URL")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(".svc-forward"),
        help="where the cursor and the signing secret are kept (default .svc-forward)",
    )
    parser.add_argument(
        "--from-start",
        action="store_true",
        help="on the first run (no cursor yet), forward the events already in the feed too; "
        "otherwise only those that come next",
    )
    parser.add_argument("--wait", type=int, default=20, help="long-poll seconds (default 20)")
    parser.add_argument(
        "--timeout", type=float, default=30, help="seconds the receiver has to answer"
    )
    parser.add_argument(
        "--max-retry-delay", type=float, default=30, help="longest pause between retries"
    )
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    key = os.environ.get("SVC_API_KEY", "")
    if not key.startswith(TEST_KEY_PREFIX):
        print("SVC_API_KEY must hold a test-mode secret key (svc_sk_test_...).", file=sys.stderr)
        return 2
    args.api = args.api.rstrip("/")
    state = State(args.state_dir, args.api, key)
    secret = state.secret()
    log(f"Forwarding test-mode events to {args.to}; signing secret {secret}")
    stopping = Stopping()
    stopping.install()
    try:
        follow(args, key, state, secret, stopping)
    except Stop as stop:
        print(stop, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
