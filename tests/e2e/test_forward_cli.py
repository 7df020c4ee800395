"""svc-forward (clients/forward/) against the real web process and a real local HTTPS receiver,
killed with SIGKILL 20 times while thousands of events are written: every event reaches the
receiver, in feed order, signed as a webhook is; none is sent again after its 2xx, but the
one whose 2xx the killed process had not yet recorded (sent again first thing on resume)."""

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest
from django.db import connections, transaction

from events.feed import START, read_feed
from events.models import Event
from events.serializers import event_to_dict
from events.services import emit_all
from tests.e2e.processes import ROOT, web_server
from tests.webhooks.receiver import Reply
from webhooks.signing import sign

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

EVENTS = 2000
KILLS = 20
FORWARD = ROOT / "clients" / "forward"


def start_forwarding(
    api: str, to: str, state_dir, key: str, ca_bundle: str, log, *options: str
) -> subprocess.Popen:
    """The CLI with the standard library only (`-S`: no site-packages), trusting the
    receiver's CA."""
    return subprocess.Popen(
        [sys.executable, "-S", "-m", "svc_forward", "--api", api, "--to", to]
        + ["--state-dir", str(state_dir), "--wait", "2", "--max-retry-delay", "0.5", *options],
        cwd=FORWARD,
        env={"SVC_API_KEY": key, "SSL_CERT_FILE": ca_bundle, "PATH": os.environ["PATH"]},
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def write_events(merchant, written: list, done: threading.Event, count: int = EVENTS) -> None:
    """`count` events or a few more, in transactions of one to three, as services write them."""
    chance = random.Random(36)
    try:
        while len(written) < count:
            types = ["payment.created", "payment.authorized", "payment.captured"]
            obj = {"id": f"pay_{len(written):026d}", "object": "payment", "status": "captured"}
            with transaction.atomic():
                events = emit_all(
                    merchant=merchant,
                    livemode=False,
                    types=types[: chance.randint(1, 3)],
                    obj=obj,
                )
            written.extend(event.id for event in events)
    finally:
        done.set()
        connections.close_all()


def wait_for(condition, process: subprocess.Popen | None = None, timeout: float = 300) -> None:
    """Polls `condition` (not a timing assertion: the timeout only ends a hung run)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert process is None or process.poll() is None, "svc-forward exited on its own"
        assert time.monotonic() < deadline, "no progress"
        time.sleep(0.01)


def test_forwarding_killed_20_times_loses_nothing_and_repeats_nothing_taken(
    merchant, new_merchant, receiver, ca_bundle, settings, tmp_path
):
    settings.EVENT_FAN_OUT_HOOKS = []  # no endpoints: the feed is the only reader
    key = new_merchant.keys["test"]["secret"].secret
    state_dir, chance = tmp_path / "state", random.Random(20)
    written, writing_done = [], threading.Event()
    runs: list[int] = []  # where each run of the CLI starts in receiver.requests
    with web_server() as api, open(tmp_path / "forward.log", "ab") as log:
        writer = threading.Thread(target=write_events, args=(merchant, written, writing_done))
        writer.start()

        def start():
            receiver.settle()  # what the killed run sent is recorded before this run starts
            runs.append(len(receiver.requests))
            return start_forwarding(
                api, receiver.url(), state_dir, key, ca_bundle, log, "--from-start"
            )

        process = start()
        for kill in range(KILLS):
            target = len(receiver.requests) + chance.randint(10, 120)
            wait_for(lambda t=target: len(receiver.requests) >= t, process)
            if kill % 4 == 1:  # the receiver fails a while: the CLI retries
                receiver.reply = Reply(status=503)
                failing_from = len(receiver.requests)
                wait_for(lambda f=failing_from: len(receiver.requests) >= f + 3, process)
                receiver.reply = Reply()
            process.send_signal(signal.SIGKILL)
            assert process.wait(timeout=30) == -signal.SIGKILL
            process = start()
        writer.join()
        wait_for(lambda: taken(receiver.requests) >= set(written), process)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        receiver.settle()

    requests = receiver.requests
    assert len(written) >= EVENTS and taken(requests) == set(written)  # every event, nothing else
    assert any(r.status == 503 for r in requests)

    secret = (state_dir / "secret").read_text()
    stored = {e.id: e for e in Event.objects.filter(merchant=merchant)}
    for request in requests:  # signed and shaped as a webhook delivery
        event_id = request.headers["Service-Event-Id"]
        timestamp, signature = request.headers["Service-Signature"].split(",")
        t = int(timestamp.removeprefix("t="))
        assert signature == f"v1={sign(secret, t, request.body)}"
        assert request.headers["Idempotency-Key"] == event_id
        assert request.body == event_body(stored[event_id])

    # In feed order, first deliveries included.
    first_taken = list(
        dict.fromkeys(r.headers["Service-Event-Id"] for r in requests if r.status == 200)
    )
    feed_order = sorted(stored.values(), key=lambda e: (e.transaction_id, e.sequence))
    assert first_taken == [e.id for e in feed_order]

    # Taken twice: only the last one a killed run took, sent again first by the next run.
    boundaries = runs + [len(requests)]
    taken_before: set[str] = set()
    repeats, last_taken = 0, None
    for start_at, end_at in zip(boundaries, boundaries[1:], strict=False):
        run = [r for r in requests[start_at:end_at] if r.status == 200]
        ids = [r.headers["Service-Event-Id"] for r in run]
        assert not [i for i, n in Counter(ids).items() if n > 1], "taken twice in one run"
        again = [i for i in ids if i in taken_before]
        if again:
            repeats += 1
            assert again == [requests[start_at].headers["Service-Event-Id"]] == [last_taken]
        taken_before.update(ids)
        last_taken = ids[-1] if ids else last_taken
    assert repeats <= KILLS


def test_a_first_run_forwards_what_comes_next_from_the_end_it_stored(
    merchant, new_merchant, receiver, ca_bundle, settings, tmp_path
):
    settings.EVENT_FAN_OUT_HOOKS = []
    key, state_dir = new_merchant.keys["test"]["secret"].secret, tmp_path / "state"
    done, earlier = threading.Event(), []
    write_events(merchant, earlier, done, count=3)  # before the first run: not forwarded
    # The feed shows them once older transactions of the server (other sessions') have ended.
    wait_for(lambda: len(feed_now(merchant)) == len(earlier))
    with web_server() as api, open(tmp_path / "forward.log", "ab") as log:
        process = start_forwarding(api, receiver.url(), state_dir, key, ca_bundle, log)
        wait_for(lambda: stored_cursor(state_dir), process)  # the end, stored first
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        later: list[str] = []
        write_events(merchant, later, done, count=2)
        process = start_forwarding(api, receiver.url(), state_dir, key, ca_bundle, log)
        wait_for(lambda: taken(receiver.requests) >= set(later), process)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert [r.headers["Service-Event-Id"] for r in receiver.requests] == later


def test_a_stop_while_an_event_is_on_its_way_waits_for_its_answer_and_repeats_nothing(
    merchant, new_merchant, receiver, ca_bundle, settings, tmp_path
):
    """SIGTERM (or Ctrl-C) while the receiver holds an event: the CLI waits for the answer
    and writes the cursor before it ends, so the next run does not send that event again
    (SIGKILL can: the test above)."""
    settings.EVENT_FAN_OUT_HOOKS = []
    key, state_dir = new_merchant.keys["test"]["secret"].secret, tmp_path / "state"
    written: list[str] = []
    write_events(merchant, written, threading.Event(), count=3)
    receiver.reply.hold = True
    with web_server() as api, open(tmp_path / "forward.log", "ab") as log:
        process = start_forwarding(
            api, receiver.url(), state_dir, key, ca_bundle, log, "--from-start"
        )
        wait_for(lambda: receiver.requests, process)  # the first event is on its way
        process.send_signal(signal.SIGTERM)
        receiver.release.set()  # its answer, after the stop was asked
        assert process.wait(timeout=60) == 0
        assert [r.headers["Service-Event-Id"] for r in receiver.requests] == written[:1]
        process = start_forwarding(api, receiver.url(), state_dir, key, ca_bundle, log)
        wait_for(lambda: taken(receiver.requests) >= set(written), process)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert [r.headers["Service-Event-Id"] for r in receiver.requests] == written


def stored_cursor(state_dir) -> bool:
    """The cursor file is in place: its temporary (`cursor-….tmp`, before the rename) is not,
    and a kill between the two leaves the next run without a cursor."""
    return any(not path.name.endswith(".tmp") for path in state_dir.glob("cursor-*"))


def feed_now(merchant) -> list:
    return read_feed(merchant=merchant, livemode=False, after=START, limit=100).events


def taken(requests) -> set[str]:
    """The events the receiver answered 2xx."""
    return {r.headers["Service-Event-Id"] for r in requests if r.status == 200}


def event_body(event: Event) -> bytes:
    """What the CLI sends: the event as the API renders it, in the service's JSON form."""
    return json.dumps(event_to_dict(event), separators=(",", ":"), ensure_ascii=False).encode()


def test_svc_forward_installs_on_its_own_and_takes_only_a_test_key(tmp_path):
    """pip installs the package alone, as a user would (`--no-deps`: it declares none); its
    command refuses a live key, so live events never land on a developer's machine."""
    target = tmp_path / "installed"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target"]
        + [str(target), str(FORWARD)],
        check=True,
        timeout=300,
    )
    refused = subprocess.run(
        [sys.executable, "-S", "-m", "svc_forward", "--api", "http://127.0.0.1:9", "--to", "x"],
        env={"PYTHONPATH": str(target), "SVC_API_KEY": "svc_sk_live_0123456789abcdefghij"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "test-mode secret key" in refused.stderr
    assert (target / "bin" / "svc-forward").exists()
