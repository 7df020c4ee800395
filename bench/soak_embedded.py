"""Soak of the embedded defaults: `make run` with no DATABASE_URL / REDIS_URL (SQLite + the
embedded broker), payments and webhook deliveries flowing at a steady modest rate.

It copies the source tree into a scratch folder (its own var/, the worktree's .venv linked),
starts the real `make run` stack there (web, worker, webhooks worker, beat from the Procfile),
creates a merchant, registers an endpoint on a local HTTPS receiver, and for --minutes keeps
--rate payments a second flowing (each read back at once). Then it checks that no process
exited, every payment created is listed, and every event the merchant has reached the receiver
(by event id), and reports payments, events, deliveries, delivery lag and process RSS.
Not part of `make test`. Exit status 1 when a check fails.

Usage: .venv/bin/python bench/soak_embedded.py [--minutes 30] [--rate 4]
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests
import trustme

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.webhooks.receiver import Receiver  # noqa: E402

CARD = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2099, "cvc": "123"}
PROCESS_NAMES = ("granian", "celery")


def scratch_copy() -> Path:
    """The worktree's files (tracked and new, not ignored) in a scratch folder, mtimes kept so
    make does not reinstall; the worktree's .venv linked, an empty var/."""
    folder = Path(tempfile.mkdtemp(prefix="soak-embedded-"))
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    for name in listed.stdout.split("\n"):
        if name and (ROOT / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, folder / name)
    (folder / ".venv").symlink_to(ROOT / ".venv")
    return folder


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def embedded_env(**extra) -> dict:
    env = {
        key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")
    }
    env.update(DEBUG="true", **extra)
    return env


def stack_processes(root: int) -> dict[int, str]:
    """pid -> command line of the service's processes below `root` (honcho gives each
    process its own session, so they are found by parentage)."""
    parents, commands = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        commands[int(entry.name)] = command
    below, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - below
        below |= frontier
    return {
        pid: commands[pid]
        for pid in below
        if any(name in commands[pid] for name in PROCESS_NAMES)
        and not commands[pid].startswith("/bin/sh")
    }


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until_serving(base: str, stack: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if stack.poll() is not None:
            raise SystemExit(f"make run exited with {stack.returncode}")
        try:
            requests.get(base + "/v1/", timeout=1)
            return
        except requests.ConnectionError:
            time.sleep(0.5)
    raise SystemExit(f"{base} did not serve within {timeout} s")


class Client:
    """The merchant's HTTP calls; a 429 waits as Retry-After says and retries."""

    def __init__(self, base: str, keys: dict):
        self.base, self.keys, self.session = base + "/v1", keys, requests.Session()
        self.failures: list[str] = []

    def call(self, method: str, path: str, key: str, **kwargs) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.keys[key]}"}
        while True:
            response = self.session.request(
                method, self.base + path, headers=headers, timeout=60, **kwargs
            )
            if response.status_code != 429:
                return response
            time.sleep(float(response.headers.get("Retry-After", 1)))

    def pay(self, number: int) -> str | None:
        """Tokenise, pay, read back; -> the payment id, or None (recorded as a failure)."""
        token = self.call("POST", "/sandbox/tokens", "publishable", json=CARD)
        body = {"amount": 1000 + number % 500, "currency": "eur", "reference": f"soak-{number}"}
        body["payment_method"] = {"type": "card", "token": token.json().get("id")}
        created = self.call("POST", "/payments", "secret", json=body)
        if created.status_code != 201:
            self.failures.append(f"payment {number}: {created.status_code} {created.text[:200]}")
            return None
        payment_id = created.json()["id"]
        read = self.call("GET", f"/payments/{payment_id}", "secret")
        if read.status_code != 200:
            self.failures.append(f"read {payment_id}: {read.status_code}")
        return payment_id

    def every(self, path: str) -> list[dict]:
        """Every item of a list endpoint, page by page."""
        items, params = [], {"limit": 100}
        while True:
            page = self.call("GET", path, "secret", params=params).json()
            items += page["data"]
            if not page["has_more"]:
                return items
            params["starting_after"] = page["next_cursor"]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--rate", type=float, default=4, help="payments a second")
    args = parser.parse_args()

    folder = scratch_copy()
    ca = trustme.CA()
    ca_file = folder / "soak-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    receiver = Receiver(ca)
    port = free_port()
    env = embedded_env(
        PORT=str(port), WEBHOOK_ALLOWED_NETWORKS="127.0.0.0/8", WEBHOOK_CA_BUNDLE=str(ca_file)
    )
    log = open(folder / "stack.log", "w")
    print(f"scratch folder {folder}; stack log {folder / 'stack.log'}; port {port}", flush=True)
    stack = subprocess.Popen(
        ["make", "run", f"PORT={port}"],
        cwd=folder,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        soak(args, folder, env, stack, receiver, f"http://127.0.0.1:{port}")
    finally:
        if stack.poll() is None:
            os.killpg(stack.pid, signal.SIGINT)
            stack.wait(60)
        receiver.close()


def soak(args, folder: Path, env: dict, stack, receiver: Receiver, base: str) -> None:
    wait_until_serving(base, stack)
    merchant = subprocess.run(
        [".venv/bin/python", "manage.py", "create_merchant", "--name", "Soak"]
        + ["--email", "soak@soak.test", "--json"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    client = Client(base, json.loads(merchant.stdout)["keys"]["test"])
    endpoint = client.call("POST", "/webhook-endpoints", "secret", json={"url": receiver.url()})
    assert endpoint.status_code == 201, endpoint.text

    time.sleep(5)  # let every process finish starting before the first RSS reading
    processes = stack_processes(stack.pid)
    rss_start = {pid: rss_mb(pid) for pid in processes}
    cpu_start = {pid: cpu_seconds(pid) for pid in processes}
    print(f"{len(processes)} processes:", flush=True)
    for pid, command in processes.items():
        print(f"  {pid} {rss_start[pid]:6.1f} MB  {command[:110]}", flush=True)

    paid_at: dict[str, float] = {}
    started = time.monotonic()
    end = started + args.minutes * 60
    next_report, number = started + 60, 0
    while time.monotonic() < end and stack.poll() is None:
        due = started + number / args.rate
        time.sleep(max(0.0, due - time.monotonic()))
        payment_id = client.pay(number)
        if payment_id:
            paid_at[payment_id] = time.time()
        number += 1
        if time.monotonic() >= next_report:
            next_report += 60
            alive = len(stack_processes(stack.pid))
            minutes = (time.monotonic() - started) / 60
            print(
                f"{minutes:5.1f} min: {len(paid_at)} payments, "
                f"{len(receiver.requests)} deliveries, "
                f"{alive}/{len(processes)} processes, {len(client.failures)} failures",
                flush=True,
            )

    # Drain: wait for deliveries to settle (bounded), then compare with what the API lists.
    settle = time.monotonic() + 120
    expected = {event["id"] for event in client.every("/events")}
    while time.monotonic() < settle and not expected <= delivered_ids(receiver):
        time.sleep(1)
    report(args, stack, processes, (rss_start, cpu_start), client, paid_at, receiver, expected)


def delivered_ids(receiver: Receiver) -> set[str]:
    return {request.headers["Service-Event-Id"] for request in list(receiver.requests)}


def report(args, stack, processes, at_start, client, paid_at, receiver, expected) -> None:
    rss_start, cpu_start = at_start
    alive = stack_processes(stack.pid)
    exited = sorted(set(processes) - set(alive))
    listed = {payment["id"] for payment in client.every("/payments")}
    unlisted = set(paid_at) - listed
    received = list(receiver.requests)
    delivered = delivered_ids(receiver)
    missing = expected - delivered
    lags = []
    for request in received:
        payment_id = json.loads(request.body)["data"]["object"].get("id")
        if payment_id in paid_at:
            lags.append((request.at - paid_at[payment_id]) * 1000)
    print(f"\nsoak: {args.minutes} min at {args.rate} payments/s on the embedded defaults")
    print(
        f"payments created {len(paid_at)}, listed {len(listed)}, missing from list {len(unlisted)}"
    )
    print(f"request failures {len(client.failures)}: {client.failures[:5]}")
    print(
        f"events {len(expected)}, delivered (distinct ids) {len(delivered & expected)}, "
        f"missing {len(missing)}, deliveries received {len(received)} "
        f"(repeats {len(received) - len(delivered)})"
    )
    if lags:
        print(
            "delivery lag after the payment's response: "
            f"p50 {statistics.median(lags):.0f} ms, p99 {percentile(lags, 0.99):.0f} ms, "
            f"max {max(lags):.0f} ms"
        )
    print(f"processes at start {len(processes)}, exited {len(exited)}: {exited}")
    for pid, command in processes.items():
        if pid not in alive:
            print(f"  {pid} EXITED  {command[:90]}")
            continue
        cpu = cpu_seconds(pid) - cpu_start[pid]
        print(
            f"  {pid} RSS {rss_start[pid]:6.1f} -> {rss_mb(pid):6.1f} MB, CPU {cpu:7.1f} s  "
            f"{command[:80]}"
        )
    if exited or unlisted or missing or client.failures or stack.poll() is not None:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
