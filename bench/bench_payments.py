"""Benchmark: POST /v1/payments through the whole stack, against the durable floor.

Starts the service (granian, as the Procfile; `SERVE=api` as `serve.py web`, unless SERVE is
set) on PostgreSQL + Redis, pre-creates tokens, then drives
`POST /v1/payments` (automatic capture, a fresh Idempotency-Key each) at fixed concurrencies
from a second process, after `--warmup` seconds of the same load unmeasured, and reports
payments/s, p50 and p99. In the same run it measures the durable floor: a raw psycopg loop
writing the rows one payment writes (token taken, payment, two events), one transaction each,
at the same concurrency. Beside them, CPU ms per create from /proc: the app (the web server
and every process under it), PostgreSQL's backends on the bench database, the load generator
and the whole machine, read `--settle` seconds after the load stops (background writes
counted). Of these figures the app's CPU per create moves least with other load on the
machine (it still rises with it: shared cores and caches).
`--live` adds, at each concurrency, live creates through the Stripe connector with localstripe
(tests/support/localstripe.py) as Stripe: the same load on live tokens made at the emulator, its
process's CPU per create measured apart (docs/processors.md "Cost of a live create").
`--profile N` also profiles N payments in-process and prints where the time goes. `--json FILE`
writes the figures for bench/ab.py, which alternates two checkouts or settings.
`--production-limits --pace N` is a merchant's load test in the sandbox: the default limits,
each client starting a create every 1/N s, all at once (docs/admission.md "Load-testing the
sandbox").

    make bench                                   # every bench/bench_*.py
    .venv/bin/python bench/bench_payments.py --seconds 5 --concurrency 1 8 32
    .venv/bin/python bench/bench_payments.py --live --seconds 5 --concurrency 1 8
    .venv/bin/python bench/bench_payments.py --app ../before   # another checkout, this venv

BENCH_DATABASE_URL (a database it may drop and recreate) and BENCH_REDIS_URL default to the local
servers (PostgreSQL through its Unix socket when it has one).
"""

import argparse
import contextlib
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import partial
from http.client import HTTPConnection
from multiprocessing import get_context
from pathlib import Path
from urllib.parse import quote, urlsplit

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # api.ids for the floor; the suite's localstripe launcher

from tests.support.localstripe import Emulator, running_localstripe  # noqa: E402

PYTHON = str(ROOT / ".venv" / "bin" / "python")
LOCAL_SOCKET_DIR = Path("/var/run/postgresql")


def local_database_url(name: str) -> str:
    """The local PostgreSQL through its Unix socket when it has one (as a deployment with the
    database on the same machine would reach it: less kernel work per round trip than
    loopback TCP), else 127.0.0.1:5432."""
    if (LOCAL_SOCKET_DIR / ".s.PGSQL.5432").exists():
        return f"postgres://postgres@{quote(str(LOCAL_SOCKET_DIR), safe='')}/{name}"
    return f"postgres://postgres@127.0.0.1:5432/{name}"


DEFAULT_REDIS = "redis://127.0.0.1:6379/9"


def add_service_arguments(parser, database: str) -> None:
    """--database-url (BENCH_DATABASE_URL, else the local database `database`, which the
    bench may drop) and --redis-url (BENCH_REDIS_URL): every service-starting bench's."""
    parser.add_argument(
        "--database-url",
        default=os.environ.get("BENCH_DATABASE_URL") or local_database_url(database),
    )
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS))


def production_env(args) -> dict:
    """A production-like environment of the service (DEBUG off, bench secrets); every command
    of the service runs in its checkout (--app), which PYTHONPATH names. Shared by the
    benchmarks that start the service (bench_neighbours too)."""
    return {
        **os.environ,
        "DATABASE_URL": args.database_url,
        "REDIS_URL": args.redis_url,
        "DEBUG": "false",
        "DJANGO_SECRET_KEY": "bench-secret-key",
        "API_KEY_PEPPER": "bench-pepper",
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(Path(args.app).resolve()),
    }


def service_env(args) -> dict:
    env = {
        **production_env(args),
        "DATABASE_POOL_MAX": str(args.pool_max),
        "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",  # for --subscribed
        "SERVE": os.environ.get("SERVE", "api"),  # as serve.py web: the API without the admin
    }
    if args.production_limits:  # what a merchant's load test meets (the statuses column)
        return env
    return {
        **env,
        # Throughput, not the limiter, is measured: lift the per-key limits out of the way.
        "API_RATE_LIMIT_TEST_RATE": "1000000",
        "API_RATE_LIMIT_TEST_BURST": "1000000",
        "API_RATE_LIMIT_LIVE_RATE": "1000000",
        "API_RATE_LIMIT_LIVE_BURST": "1000000",
        "API_CONCURRENCY_TEST": "1000000",  # the budget is still taken and given back
        "API_CONCURRENCY_LIVE": "1000000",
        "API_LOAD_SHEDDING": "false",  # one merchant's load is the point, not a neighbour's
    }


def recreate_database(url: str) -> None:
    base, _, name = url.rpartition("/")
    with psycopg.connect(base + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def manage(env: dict, *argv: str) -> str:
    done = subprocess.run(
        [PYTHON, "manage.py", *argv],
        cwd=env["PYTHONPATH"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


SETUP_TOKENS = """
import sys, datetime, django
django.setup()
from django.utils import timezone
from accounts.models import Merchant
from payments.models import Token
merchant, count = Merchant.objects.get(pk=sys.argv[1]), int(sys.argv[2])
now = timezone.now()
card = {"type": "card", "brand": "visa", "last4": "4242", "exp_month": 12, "exp_year": 2099,
        "created": now, "expires_at": now + datetime.timedelta(hours=2)}

def test_tokens():
    from sandbox.services import card_fingerprint
    fingerprint = card_fingerprint(merchant=merchant, number="4242424242424242")
    tokens = [Token(merchant=merchant, livemode=False, bin="424242", fingerprint=fingerprint,
                    planned_outcome="approved", **card) for _ in range(count)]
    return Token.objects.bulk_create(tokens, batch_size=2000)

def live_tokens(account_id):
    # As the hosted fields leave them: the card went to the processor only (its payment
    # method), we keep a Token and the link to that payment method.
    from processors.models import ConnectorAccount, ProcessorObject
    from processors.stripe.client import stripe_client
    account = ConnectorAccount.objects.get(pk=account_id)
    params = {"type": "card", "card": {"number": "4242424242424242", "exp_month": 12,
                                       "exp_year": 2099, "cvc": "123"}}
    methods = [stripe_client(account).v1.payment_methods.create(params=params)
               for _ in range(count)]
    tokens = [Token(merchant=merchant, livemode=True, bin="", fingerprint=m.card.fingerprint,
                    planned_outcome="", **card) for m in methods]
    Token.objects.bulk_create(tokens, batch_size=2000)
    ProcessorObject.objects.bulk_create(
        [ProcessorObject(kind="token", our_id=t.id, account=account, processor_id=m.id)
         for t, m in zip(tokens, methods)], batch_size=2000)
    return tokens

tokens = live_tokens(sys.argv[3]) if sys.argv[3:] else test_tokens()
print("\\n".join(t.id for t in tokens))
"""


def create_tokens(env: dict, merchant_id: str, count: int, account_id: str = "") -> list[str]:
    """`count` unused card tokens of the merchant, in one process: test ones, or with
    `account_id` live ones made at that connector account (one payment method each)."""
    done = subprocess.run(
        [PYTHON, "-c", SETUP_TOKENS, merchant_id, str(count), *filter(None, [account_id])],
        cwd=env["PYTHONPATH"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


@dataclass
class Live:
    """The live side (--live): the merchant's connector account at the emulator, and it."""

    account_id: str
    emulator: Emulator


def go_live(env: dict, merchant_id: str, emulator_url: str) -> str:
    """A connector account of the merchant whose API is the emulator, and its live card route
    in EUR, through the commands an operator runs (docs/going-live.md). -> the account's id."""
    keys = {  # any sk_ key will do for localstripe; never on a command line
        "CONNECTOR_SECRET_KEY": "sk_test_bench_emulated_secret_key",
        "CONNECTOR_PUBLISHABLE_KEY": "pk_test_bench_emulated_publishable_key",
    }
    created = manage(
        {**env, **keys},
        *("connector_account", "create", "--processor", "stripe", "--name", "Bench"),
        *("--merchant", merchant_id, "--api-base", emulator_url, "--json"),
    )
    account_id = json.loads(created)["id"]
    manage(
        env,
        *("route", "set", "--merchant", merchant_id, "--method", "card", "--currency", "eur"),
        *("--connector", "stripe", "--account", account_id),
    )
    return account_id


def start_server(env: dict, args) -> subprocess.Popen:
    server = subprocess.Popen(
        [
            str(ROOT / ".venv" / "bin" / "granian"),
            "--interface",
            "wsgi",
            "--host",
            "127.0.0.1",
            "--port",
            str(args.port),
            "--workers",
            str(args.workers),
            "--blocking-threads",
            str(args.threads),
            "--no-ws",
            "--log-level",
            "warning",
            "config.wsgi:application",
        ],
        cwd=env["PYTHONPATH"],
        env=env,
    )
    deadline = time.monotonic() + 90  # a loaded machine imports Django slowly
    while time.monotonic() < deadline:
        try:
            conn = HTTPConnection("127.0.0.1", args.port, timeout=1)
            conn.request("GET", "/v1/payments")
            conn.getresponse().read()
            return server
        except OSError:
            time.sleep(0.1)
    server.terminate()
    raise SystemExit("the web server did not start")


# --- load (each measurement runs in a second process) -----------------------------------------


def timed_loop(make_worker, tokens: list[str], concurrency: int, seconds: float, pace=0.0):
    """`concurrency` threads, each with its own `make_worker()` (its own connection), spend
    tokens until time is up, each as fast as it is answered or, with `pace`, starting a
    request every 1/pace s (all threads at once: a load tool's virtual users).
    -> (latencies, elapsed seconds, CPU seconds of this process)."""
    queue, lock, latencies = list(tokens), threading.Lock(), []
    deadline = time.perf_counter() + seconds

    def run():
        work, mine = make_worker(), []
        next_start = time.perf_counter()
        while time.perf_counter() < deadline:
            with lock:
                token = queue.pop() if queue else None
            if token is None:
                break
            started = time.perf_counter()
            work(token)
            mine.append(time.perf_counter() - started)
            if pace:
                next_start += 1 / pace
                time.sleep(max(0.0, next_start - time.perf_counter()))
        with lock:
            latencies.extend(mine)

    started, cpu_started = time.perf_counter(), time.process_time()
    threads = [threading.Thread(target=run) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, time.perf_counter() - started, time.process_time() - cpu_started


class KeepAliveClient:
    """A minimal HTTP/1.1 client on one keep-alive connection. The load generator shares the
    machine's two cores with the service, so it does as little as a load generator can:
    http.client's header parsing (email.parser) alone costs more CPU per request than this."""

    def __init__(self, port: int, source: str = "127.0.0.1"):
        self.sock = socket.create_connection(("127.0.0.1", port), 30, (source, 0))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def post(self, path: str, headers: dict, body: bytes) -> tuple[int, bytes]:
        return self.request("POST", path, headers, body)

    def request(self, method: str, path: str, headers: dict, body: bytes = b""):
        lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        head = self._read_until(b"\r\n\r\n")
        status = int(head[9:12])
        fields = dict(
            line.split(b":", 1) for line in head.lower().split(b"\r\n")[1:] if b":" in line
        )
        if b"content-length" in fields:
            return status, self._read_exactly(int(fields[b"content-length"]))
        return status, self._read_chunked()

    def _read_more(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("the server closed the connection")
        self.buffer += data

    def _read_until(self, marker: bytes) -> bytes:
        while (end := self.buffer.find(marker)) < 0:
            self._read_more()
        found, self.buffer = self.buffer[:end], self.buffer[end + len(marker) :]
        return found

    def _read_exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self._read_more()
        found, self.buffer = self.buffer[:size], self.buffer[size:]
        return found

    def _read_chunked(self) -> bytes:
        chunks = []
        while size := int(self._read_until(b"\r\n").split(b";")[0], 16):
            chunks.append(self._read_exactly(size))
            self._read_until(b"\r\n")
        self._read_until(b"\r\n")  # the empty trailer
        return b"".join(chunks)


def drive(port: int, secret: str, tokens: list[str], concurrency: int, seconds: float, pace, out):
    """POST /v1/payments over keep-alive connections, a fresh Idempotency-Key each (`pace`:
    timed_loop's)."""
    statuses: Counter = Counter()

    def make_worker():
        client = KeepAliveClient(port)

        def pay(token):
            body = {"amount": 1000, "currency": "eur", "reference": "bench",
                    "payment_method": {"type": "card", "token": token}}  # fmt: skip
            headers = {
                "Authorization": f"Bearer {secret}",
                "Content-Type": "application/json",
                "Idempotency-Key": str(uuid.uuid4()),
            }
            status, _ = client.post("/v1/payments", headers, json.dumps(body).encode())
            statuses[status] += 1

        return pay

    out.put((*timed_loop(make_worker, tokens, concurrency, seconds, pace), dict(statuses)))


def run_in_second_process(target, *args):
    context = get_context("spawn")
    out = context.Queue()
    process = context.Process(target=target, args=(*args, out))
    process.start()
    result = out.get()
    process.join()
    return result


# --- the durable floor -----------------------------------------------------------------------

FLOOR_SQL = (
    "UPDATE payments_token SET used_at = now() WHERE id = %s AND used_at IS NULL",
    """INSERT INTO payments_payment (id, merchant_id, livemode, status, amount, amount_captured,
        amount_refunded, currency, reference, capture_method, method_type, card, method_details,
        outcome, fees, metadata, created, authorized_at, captured_at, token_id)
       VALUES (%s, %s, false, 'captured', 1000, 1000, 0, 'eur', 'bench', 'automatic', 'card',
        %s, '{}', %s, %s, '{}', now(), now(), now(), %s)""",
    """INSERT INTO events_event (id, merchant_id, livemode, type, api_version, resource_id, data,
        created) VALUES (%s, %s, false, %s, '2026-08-19', %s, %s, now())""",
)


def floor(database_url: str, merchant_id: str, tokens, concurrency, seconds, payload, out):
    """The same rows as one payment, one transaction each, on raw psycopg connections."""
    from api.ids import new_id  # the same id generator, so index behaviour matches

    card, outcome, fees, event = (
        json.dumps(payload[key]) for key in ("card", "outcome", "fees", "event")
    )

    def make_worker():
        conn = psycopg.connect(database_url)

        def pay(token):
            payment_id = new_id("pay")
            with conn.transaction():
                conn.execute(FLOOR_SQL[0], (token,))
                conn.execute(FLOOR_SQL[1], (payment_id, merchant_id, card, outcome, fees, token))
                for event_type in ("payment.created", "payment.captured"):
                    conn.execute(
                        FLOOR_SQL[2], (new_id("evt"), merchant_id, event_type, payment_id, event)
                    )

        return pay

    out.put((*timed_loop(make_worker, tokens, concurrency, seconds), {}))


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_table() -> dict[int, tuple[int, str, int]]:
    """pid -> (parent pid, command, CPU clock ticks so far, user + system) of every live
    process; Linux only (empty elsewhere)."""
    table = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)
            command = fields[0].split("(", 1)[1]
            values = fields[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        table[int(stat.parent.name)] = (int(values[1]), command, int(values[11]) + int(values[12]))
    return table


def cpu_seconds(predicate) -> float:
    """CPU time (user + system) so far of the live processes `predicate(pid, command)` selects."""
    ticks = sum(row[2] for pid, row in process_table().items() if predicate(pid, row[1]))
    return ticks / CLOCK_TICKS


def tree_cpu_seconds(root: int) -> float:
    """CPU time so far of `root` and every live descendant (granian's workers, and whatever
    they start), however deep."""
    table, children = process_table(), defaultdict(list)
    for pid, (parent, _, _) in table.items():
        children[parent].append(pid)
    ticks, pending = 0, [root]
    while pending:
        pid = pending.pop()
        ticks += table[pid][2] if pid in table else 0
        pending.extend(children[pid])
    return ticks / CLOCK_TICKS


def machine_cpu_seconds() -> float:
    """Busy CPU time of the whole machine so far (every process, also ones that have exited,
    like the floor's PostgreSQL backends); Linux only."""
    try:
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(
            int, Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
        )
    except OSError:
        return 0.0
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS


def backend_of(database: str):
    """A cpu_seconds() predicate: a PostgreSQL backend connected to `database` (its process
    title names the database), so that a server shared with other work counts only ours."""
    title = f" {database} ".encode()

    def predicate(pid: int, command: str) -> bool:
        try:
            return command == "postgres" and title in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False  # gone meanwhile

    return predicate


def cpu_meters(server_pid: int, database: str, emulator_pid: int | None) -> dict:
    """Meters for the app server (granian and its workers), PostgreSQL's live backends on the
    bench database (the server's pooled connections), the processor's emulator when there is
    one (its own process, apart from ours) and the whole machine (load generator included)."""
    meters = {
        "app": partial(tree_cpu_seconds, server_pid),
        "postgres": lambda: cpu_seconds(backend_of(database)),
        "machine": machine_cpu_seconds,
    }
    if emulator_pid is not None:
        meters["emulator"] = partial(tree_cpu_seconds, emulator_pid)
    return meters


def cpu_per_payment(meters: dict, run, settle: float) -> tuple:
    """run() -> (latencies, ...); returns its result and {meter: CPU ms per payment}. The meters
    are read again `settle` seconds after run() ended, so that work the requests left to
    background threads (the request log's writer inserts every REQUEST_LOG_FLUSH_SECONDS) is
    counted with them and not with the next measurement."""
    before = {name: read() for name, read in meters.items()}
    result = run()
    time.sleep(settle)
    count = max(1, len(result[0]))
    return result, {name: (read() - before[name]) / count * 1000 for name, read in meters.items()}


def summary(latencies: list[float], elapsed: float) -> tuple[float, float, float]:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0
    median = statistics.median(ordered) if ordered else 0.0
    return len(ordered) / elapsed, median * 1000, p99 * 1000


def sample_payload(port: int, secret: str, token: str) -> dict:
    """One real payment's JSON columns, so the floor writes rows of the same size."""
    conn = HTTPConnection("127.0.0.1", port, timeout=30)
    body = {"amount": 1000, "currency": "eur", "reference": "bench",
            "payment_method": {"type": "card", "token": token}}  # fmt: skip
    conn.request("POST", "/v1/payments", json.dumps(body), {"Authorization": f"Bearer {secret}"})
    payment = json.loads(conn.getresponse().read())
    return {
        "card": payment["method"]["card"],
        "outcome": payment["outcome"],
        "fees": payment["fees"],
        "event": {"object": payment, "previous_attributes": {}},
    }


def subscribe_endpoint(port: int, secret: str) -> None:
    """An endpoint on loopback (allowed by service_env); nothing listens, and no worker runs."""
    conn = HTTPConnection("127.0.0.1", port, timeout=30)
    body = json.dumps({"url": "https://127.0.0.1:9/hook"})
    conn.request("POST", "/v1/webhook-endpoints", body, {"Authorization": f"Bearer {secret}"})
    response = conn.getresponse()
    if response.status != 201:
        raise SystemExit(f"could not subscribe an endpoint: {response.read()!r}")


def component(filename: str) -> str:
    """A profiled function's file -> the part of the stack it belongs to."""
    if "site-packages/" in filename:
        return filename.split("site-packages/")[1].split("/")[0]
    app = os.getcwd()  # the service's checkout: profile() runs this there
    if app in filename:
        return "ours: " + filename.split(app + "/")[1].split("/")[0]
    return "stdlib/builtins"


STRIPE_ID = re.compile(r"/[a-z]+_[a-z]*[A-Z0-9][A-Za-z0-9]*")  # pi_3Ab.., not payment_intents


@contextlib.contextmanager
def stripe_calls_timed(calls: Counter, wall: dict):
    """Counts every HTTP call of the stripe library by method and path (ids as {id}) into
    `calls`, and adds their wall time to wall["seconds"]."""
    import stripe

    original = stripe.RequestsClient.request

    def request(self, method, url, headers, post_data=None):
        started = time.perf_counter()
        try:
            return original(self, method, url, headers, post_data)
        finally:
            wall["seconds"] += time.perf_counter() - started
            path = STRIPE_ID.sub("/{id}", urlsplit(url).path)
            calls[f"{method.upper()} {path}"] += 1

    stripe.RequestsClient.request = request
    try:
        yield
    finally:
        stripe.RequestsClient.request = original


def profile_in_process(secret: str, tokens: list[str]) -> None:
    """Where one payment's time goes: SQL and processor (Stripe) wall time, then own CPU time
    by component.

    Runs in its own process (`bench_payments.py _profile`), so Django is imported here.
    """
    import cProfile
    import pstats

    import django

    django.setup()
    from django.db import connection
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}", SERVER_NAME="127.0.0.1")

    def post(token):
        body = {"amount": 1000, "currency": "eur", "reference": "bench",
                "payment_method": {"type": "card", "token": token}}  # fmt: skip
        client.post("/v1/payments", json.dumps(body), content_type="application/json")

    warm, measured = tokens[:20], tokens[20:]
    for token in warm:
        post(token)
    sql = {"seconds": 0.0, "queries": 0}

    def timed_sql(execute, *args):
        started = time.perf_counter()
        try:
            return execute(*args)
        finally:
            sql["seconds"] += time.perf_counter() - started
            sql["queries"] += 1

    stripe_calls, stripe_wall = Counter(), {"seconds": 0.0}
    started, cpu_started = time.perf_counter(), time.process_time()
    with connection.execute_wrapper(timed_sql), stripe_calls_timed(stripe_calls, stripe_wall):
        for token in measured[: len(measured) // 2]:
            post(token)
    count = len(measured) // 2
    total = (time.perf_counter() - started) / count * 1000
    cpu = (time.process_time() - cpu_started) / count * 1000
    print(f"in-process, no profiler: {total:.2f} ms per payment ({cpu:.2f} ms of this process's "
          f"CPU), of which SQL (wall) {sql['seconds'] / count * 1000:.2f} ms in "
          f"{sql['queries'] / count:.1f} statements (+ BEGIN/COMMIT)")  # fmt: skip
    if stripe_calls:
        each = ", ".join(f"{name} x{n / count:.1f}" for name, n in stripe_calls.most_common())
        print(f"  and Stripe (wall) {stripe_wall['seconds'] / count * 1000:.2f} ms in "
              f"{stripe_calls.total() / count:.1f} calls: {each}")  # fmt: skip
    profiler = cProfile.Profile(time.process_time)  # CPU: a wait on a socket is not work
    profiler.enable()
    for token in measured[count:]:
        post(token)
    profiler.disable()
    functions = pstats.Stats(profiler).stats.items()
    own = Counter()
    for (filename, _, _), (_, _, tottime, _, _) in functions:
        own[component(filename)] += tottime
    whole = sum(own.values())
    print("own CPU time by component, under cProfile (inflated, for proportions):")
    for name, seconds in own.most_common(10):
        print(f"  {seconds / whole:6.1%}  {name}")
    print("own CPU time by function:")
    profiled = len(measured) - count
    costliest = sorted(functions, key=lambda item: -item[1][2])[:15]
    for (filename, line, name), (_, calls, tottime, _, _) in costliest:
        where = f"{component(filename)} {os.path.basename(filename)}:{line} {name}"
        print(f"  {tottime / whole:6.1%}  {calls / profiled:5.1f}x  {where}")


def profile(env: dict, account: dict, live: Live | None, count: int) -> None:
    """Profiles `count` test creates in-process, then as many live ones when there are."""
    kinds = [("test", account["keys"]["test"]["secret"], {})]
    if live:
        live.emulator.flush()
        kinds.append(("live", account["keys"]["live"]["secret"], {"account_id": live.account_id}))
    for kind, secret, made_at in kinds:
        print(f"{kind} creates:")
        tokens = create_tokens(env, account["id"], count + 20, **made_at)
        subprocess.run(
            [PYTHON, __file__, "_profile", secret, *tokens],
            cwd=env["PYTHONPATH"],
            env=env,
            check=True,
        )


FIGURES = ("per_s", "p50_ms", "p99_ms")


def creates(args, meters: dict, secret: str, make_tokens, count: int, concurrency: int) -> dict:
    """One kind of create (the key and the tokens say which: test or live) at one concurrency:
    `--warmup` seconds unmeasured (each worker's first requests, statements not yet prepared),
    then `--seconds` measured on `count` fresh tokens. -> payments/s, p50 and p99 ms, CPU ms
    per create by meter, the statuses answered."""
    if args.warmup:
        warm = make_tokens(count // 2)
        run_in_second_process(drive, args.port, secret, warm, concurrency, args.warmup, args.pace)
    tokens = make_tokens(count)
    load = (drive, args.port, secret, tokens, concurrency, args.seconds, args.pace)
    (latencies, elapsed, client_cpu, statuses), cpu = cpu_per_payment(
        meters, partial(run_in_second_process, *load), args.settle
    )
    return {
        **dict(zip(FIGURES, summary(latencies, elapsed), strict=True)),
        "creates": len(latencies),
        "ran_out": len(latencies) == count,  # fewer seconds measured than asked: more tokens
        "statuses": statuses,
        "cpu_ms": {**cpu, "load_generator": client_cpu / max(1, len(latencies)) * 1000},
    }


def measure(env, args, meters: dict, account: dict, live: Live | None, payload, concurrency):
    """One concurrency level: test creates, the floor, then (--live) live creates. -> its
    figures (bench/ab.py reads them from --json): payments/s, p50 and p99 ms, the ratio to the
    floor, CPU ms per create by meter, and the load average when it ended; under "live" the
    live creates' own."""
    merchant_id, keys = account["id"], account["keys"]
    make_tokens = partial(create_tokens, env, merchant_id)
    test = creates(args, meters, keys["test"]["secret"], make_tokens, args.tokens, concurrency)
    floor_tokens = make_tokens(args.tokens * 3)
    floor_result, floor_cpu = cpu_per_payment(
        meters,
        partial(
            run_in_second_process,
            floor,
            args.database_url,
            merchant_id,
            floor_tokens,
            concurrency,
            args.seconds,
            payload,
        ),
        args.settle,
    )
    base = summary(*floor_result[:2])
    level = {
        "concurrency": concurrency,
        "creates": test["creates"],
        "statuses": test["statuses"],
        "stack": {name: test[name] for name in FIGURES},
        "floor": dict(zip(FIGURES, base, strict=True)),
        "ratio": test["per_s"] / base[0] if base[0] else 0.0,
        "cpu_ms": {**test["cpu_ms"], "floor_machine": floor_cpu["machine"]},
        "load": os.getloadavg(),
    }
    if live:
        # Each charge localstripe serves lists its refunds by scanning its whole store: every
        # level starts from an empty one, or its CPU per create grows level after level.
        live.emulator.flush()
        live_tokens = partial(make_tokens, account_id=live.account_id)
        secret = keys["live"]["secret"]
        created = creates(args, meters, secret, live_tokens, args.live_tokens, concurrency)
        level["live"] = {**created, "load": os.getloadavg()}
    return level


CPU_METERS = (("app", "app"), ("postgres", "PostgreSQL"), ("emulator", "emulator"),
              ("load_generator", "load gen"), ("machine", "machine"))  # fmt: skip
HEADER = (
    f"{'clients':>7} {'create':<29} | {'pay/s':>6} {'p50 ms':>7} {'p99 ms':>7} | CPU ms/create: "
    + " ".join(f"{label:>10}" for _, label in CPU_METERS)
    + " | load 1 min"
)


def kind_row(concurrency, kind: str, figures: dict, cpu: dict, load: float, note="") -> str:
    meters = " ".join(
        f"{cpu[name]:>10.2f}" if name in cpu else f"{'-':>10}" for name, _ in CPU_METERS
    )
    return (
        f"{concurrency:>7} {kind:<29} | {figures['per_s']:>6.0f} {figures['p50_ms']:>7.1f} "
        f"{figures['p99_ms']:>7.1f} | {'':14}{meters} | {load:.2f}{note}"
    )


def notes(created: dict) -> str:
    unexpected = "" if set(created["statuses"]) == {201} else f"  unexpected: {created['statuses']}"
    return unexpected + ("  (tokens ran out: raise --tokens)" if created.get("ran_out") else "")


def rows(level: dict) -> list[str]:
    """A level's lines: a row per kind of create, then the ratios that mean something on a
    shared machine."""
    concurrency, cpu, load = level["concurrency"], level["cpu_ms"], level["load"][0]
    test = {**level["stack"], "statuses": level["statuses"]}
    lines = [
        kind_row(concurrency, "test", level["stack"], cpu, load, notes(test)),
        kind_row(concurrency, "floor (raw psycopg)", level["floor"],
                 {"machine": cpu["floor_machine"]}, load),
    ]  # fmt: skip
    ratios = f"test/floor pay/s {level['ratio']:.2f}"
    if live := level.get("live"):
        kind = "live (Stripe via localstripe)"
        lines.append(
            kind_row(concurrency, kind, live, live["cpu_ms"], live["load"][0], notes(live))
        )
        ratios += (
            f"; live/test pay/s {live['per_s'] / max(test['per_s'], 1e-9):.2f}, app CPU "
            f"x{live['cpu_ms']['app'] / cpu['app']:.1f}, PostgreSQL CPU "
            f"x{live['cpu_ms']['postgres'] / cpu['postgres']:.1f}"
        )
    return [*lines, f"{'':>7} {ratios}"]


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_service_arguments(parser, "svc_bench")
    parser.add_argument(
        "--app",
        default=str(ROOT),
        help="the checkout whose service is measured, run with this one's venv (A/B runs "
        "against another commit: git worktree add ../before <commit>)",
    )
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--workers", type=int, default=2)  # as the Procfile
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--pool-max", type=int, default=8)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--tokens", type=int, default=6000, help="per concurrency level")
    parser.add_argument(
        "--live",
        action="store_true",
        help="also live creates through the Stripe connector, localstripe as Stripe",
    )
    parser.add_argument(
        "--live-tokens", type=int, default=400, help="live tokens per concurrency level"
    )
    parser.add_argument("--profile", type=int, default=300, help="profile N payments (0: skip)")
    parser.add_argument(
        "--subscribed",
        action="store_true",
        help="a webhook endpoint subscribed to every event (no worker runs: deliveries queue up)",
    )
    parser.add_argument(
        "--warmup", type=float, default=2.0, help="seconds of unmeasured load before each level"
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=1.5,
        help="seconds after each measurement before the CPU meters are read (background writes)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures there (bench/ab.py)")
    parser.add_argument(
        "--require-success", action="store_true", help="exit 1 unless every create got 201"
    )
    parser.add_argument(
        "--pace",
        type=float,
        default=0.0,
        help="creates a second per client, all clients at once (a load test's users; 0: each "
        "client as fast as it is answered)",
    )
    parser.add_argument(
        "--production-limits",
        action="store_true",
        help="keep the rate limits, budgets and shedder at their defaults (a load test's view)",
    )
    return parser.parse_args()


def main():
    args = arguments()
    env = service_env(args)
    recreate_database(args.database_url)
    manage(env, "migrate", "--noinput")
    account = json.loads(
        manage(env, "create_merchant", "--name", "Bench", "--email", "b@x.test", "--json")
    )
    with running_localstripe() if args.live else contextlib.nullcontext() as emulator:
        live = emulator and Live(go_live(env, account["id"], emulator.url), emulator)
        levels = run_levels(env, args, account, live)
        if args.json:
            Path(args.json).write_text(json.dumps({"app": args.app, "levels": levels}, indent=1))
        if args.profile:
            profile(env, account, live, args.profile)
    if args.require_success:
        require_success(levels)


def require_success(levels: list[dict]) -> None:
    """`--require-success` (CI's smoke, bench/run.sh --smoke): every create answered 201 and
    every level has its figures; else exit 1. A smoke proves the bench runs, not a speed."""
    answered = [level["statuses"] for level in levels]
    answered += [level["live"]["statuses"] for level in levels if "live" in level]
    failed = [statuses for statuses in answered if {str(code) for code in statuses} != {"201"}]
    if failed or not levels or not all(level["stack"]["per_s"] > 0 for level in levels):
        raise SystemExit(f"bench smoke failed: statuses {answered}")
    print(f"bench smoke: {len(answered)} runs, every create answered 201")


def run_levels(env: dict, args, account: dict, live: Live | None) -> list[dict]:
    """Starts the service, measures each concurrency level, prints its rows. -> the levels."""
    secret = account["keys"]["test"]["secret"]
    server = start_server(env, args)
    try:
        side = "; live: the Stripe connector, localstripe as Stripe" if live else ""
        print(f"granian WSGI: {args.workers} workers x {args.threads} threads; "
              f"{args.seconds:.0f} s per level; PostgreSQL + Redis{side}")  # fmt: skip
        if args.subscribed:
            subscribe_endpoint(args.port, secret)
            print("one webhook endpoint subscribed to *: each payment also writes 2 deliveries")
        payload = sample_payload(args.port, secret, create_tokens(env, account["id"], 1)[0])
        print(HEADER)
        database = args.database_url.rpartition("/")[2]
        meters = cpu_meters(server.pid, database, live and live.emulator.pid)
        levels = []
        for concurrency in args.concurrency:
            levels.append(measure(env, args, meters, account, live, payload, concurrency))
            print("\n".join(rows(levels[-1])), flush=True)
        return levels
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    if sys.argv[1:2] == ["_profile"]:
        sys.path.insert(0, os.getcwd())
        profile_in_process(sys.argv[2], sys.argv[3:])
    else:
        main()
