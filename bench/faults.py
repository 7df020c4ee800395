"""Fault-injection suite (`make faults`, not part of `make test`): the service's real processes
under a bounded payment load while one thing at a time breaks, then recovers.

It starts the Procfile's processes (granian web with 2 workers, the Celery worker, the webhooks
worker, beat) on a scratch PostgreSQL database it creates and drops (svc_faults_run, reached
through a TCP proxy it controls) and on its own redis-server on a free port (also behind a
proxy), so nothing it breaks is shared. A local HTTPS receiver (tests/webhooks/receiver.py) is
subscribed to `payment.*`. Clients tokenise a test card with the publishable key and pay with
the secret key and an Idempotency-Key, retrying with the SAME key on no answer, a 5xx, 409
`idempotency_key_in_use` or 429 (bounded, with backoff), as a careful merchant does.

Each scenario is one phase: load, the fault, its end (the harness restarts what it killed, as
a supervisor would), more load; then recovery is awaited (bounded), every key is replayed once
and compared, and webhook deliveries are awaited (bounded). docs/faults.md says what each
scenario does and how to read the report. Exit status 1 when an invariant is broken: a key
answered two ways, a payment a client was told about missing, a key charged twice.

    .venv/bin/python bench/faults.py [--quick] [--only redis-hung pg-cut] [--json var/faults.json]

FAULTS_POSTGRES (default postgres://postgres@127.0.0.1:5432) is the server the scratch
database is made on.
"""

import argparse
import datetime
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import psycopg
import requests
import trustme

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.fault_report import Answer, differs, summarise, table, unacknowledged  # noqa: E402
from tests.fault_proxy import FaultProxy  # noqa: E402
from tests.webhooks.receiver import Receiver, Reply  # noqa: E402

POSTGRES = os.environ.get("FAULTS_POSTGRES", "postgres://postgres@127.0.0.1:5432")
DATABASE = "svc_faults_run"
REQUEST_TIMEOUT = 5.0  # what the clients wait for one answer
RETRY_DELAYS = (0.25, 0.5, 1.0, 2.0, 4.0)  # between tries of one key: 6 tries in all


@dataclass(frozen=True)
class Timing:
    before: float  # load before the fault
    fault: float  # how long the fault lasts (a kill: the supervisor's restart delay)
    after: float  # load after the fault ends
    recover: float  # bound on waiting for the first payment after the fault
    events: float  # bound on waiting for deliveries to catch up
    receiver_fault: float  # the receiver fails this long (the first retry comes after 10 s)
    receiver_events: float
    # IDEMPOTENCY_LEASE_SECONDS: longer than a hung request lives (the fault, plus a little),
    # so a retry meets the key still in use, not a second run; shorter than the default 120 s
    # so a key whose request died is free again within the phase.
    lease: float


FULL = Timing(before=6, fault=10, after=12, recover=60, events=45, receiver_fault=15,
              receiver_events=80, lease=20)  # fmt: skip
QUICK = Timing(before=3, fault=5, after=5, recover=30, events=20, receiver_fault=5,
               receiver_events=20, lease=10)  # fmt: skip


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(predicate, timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


# --- the scratch servers ----------------------------------------------------------------------


def recreate_database() -> None:
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DATABASE}"')


def drop_database() -> None:
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')


def query(sql: str, *params) -> list[tuple]:
    """Read the scratch database directly, not through the proxy the faults break."""
    with psycopg.connect(f"{POSTGRES}/{DATABASE}", autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


class OwnRedis:
    """A redis-server of the suite's own, so killing it hurts nobody else."""

    def __init__(self, logs: Path):
        self.port = free_port()
        self.logs = logs
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--appendonly", "no"]
        with open(self.logs / "redis.log", "a") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        if not wait_until(self.answers, 10):
            raise SystemExit("our redis-server did not start")

    def answers(self) -> bool:
        import redis

        try:
            return redis.Redis(port=self.port, socket_timeout=1).ping()
        except redis.RedisError:
            return False

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)


# --- the service's processes ------------------------------------------------------------------


def procfile() -> dict[str, list[str]]:
    """The Procfile's commands, so the suite runs exactly what `make run` runs, less
    scripts/supervise.py: the suite is the supervisor of what it kills, and restarts it itself.
    Each is `scripts/serve.py NAME`; `procfile_env` gives them their port and beat's schedule."""
    commands = {}
    for line in (ROOT / "Procfile").read_text().splitlines():
        name, _, command = line.partition(":")
        argv = shlex.split(command.replace("${VENV:-.venv}", ".venv"))
        if argv[1:2] == ["scripts/supervise.py"]:
            argv = argv[3:]  # python scripts/supervise.py NAME COMMAND...
        commands[name.strip()] = argv
    return commands


def procfile_env(web_port: int, work: Path) -> dict[str, str]:
    """The web port (the admin's, a free one), and beat's schedule file in the suite's work
    directory."""
    return {
        "WEB_PORT": str(web_port),
        "ADMIN_PORT": str(free_port()),
        "BEAT_SCHEDULE": str(work / "celerybeat-schedule"),
    }


class Service:
    def __init__(self, env: dict, work: Path, web_port: int):
        self.env, self.logs, self.web_port = (
            {**env, **procfile_env(web_port, work)},
            work / "logs",
            web_port,
        )
        self.commands = procfile()
        self.processes: dict[str, subprocess.Popen] = {}
        self.base = f"http://127.0.0.1:{web_port}/v1"

    def start(self, name: str) -> None:
        with open(self.logs / f"{name}.log", "a") as log:
            self.processes[name] = subprocess.Popen(
                self.commands[name], cwd=ROOT, env=self.env, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def kill(self, name: str) -> None:
        """kill -9 of the process and everything it started (a Celery worker's pool)."""
        process = self.processes[name]
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(10)

    def alive(self, name: str) -> bool:
        return self.processes[name].poll() is None

    def revive_the_dead(self) -> list[str]:
        """Processes that exited although no scenario killed them: named, and started again as
        scripts/supervise.py does under `make run` (so one crash does not spoil the phases
        after it)."""
        dead = [name for name in self.processes if not self.alive(name)]
        for name in dead:
            print(f"!! {name} exited on its own (see its log); restarted", flush=True)
            self.start(name)
        return dead

    def web_workers(self) -> list[int]:
        """The granian worker processes (children of its main process)."""
        main = self.processes["web"].pid
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == main:
                children.append(int(stat.parent.name))
        return children

    def serving(self) -> bool:
        try:
            return requests.get(self.base + "/", timeout=1).status_code < 500
        except requests.RequestException:
            return False

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for name, process in self.processes.items():
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill(name)


# --- the merchant's side ----------------------------------------------------------------------


class Clients:
    """Client threads paying with test cards; every answer each key got, in order."""

    def __init__(self, base: str, secret: str, publishable: str):
        self.base, self.secret, self.publishable = base, secret, publishable
        self.keys: dict[str, list[Answer]] = {}
        self.bodies: dict[str, bytes] = {}
        self.token_failures = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self, scenario: str, count: int, pause: float) -> None:
        self._stopping.clear()
        self._threads = [
            threading.Thread(target=self._run, args=(scenario, pause), daemon=True)
            for _ in range(count)
        ]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Each client finishes the key it is on (its retries are bounded)."""
        self._stopping.set()
        for thread in self._threads:
            thread.join()

    def answers(self) -> list[Answer]:
        with self._lock:
            return [a for answers in self.keys.values() for a in answers]

    def _run(self, scenario: str, pause: float) -> None:
        session = requests.Session()
        while not self._stopping.is_set():
            self.pay(session, scenario)
            time.sleep(pause)

    def pay(self, session: requests.Session, scenario: str) -> list[Answer]:
        token = self._tokenise(session)
        if token is None:
            with self._lock:
                self.token_failures += 1
            return []
        key = f"{scenario}-{uuid.uuid4().hex}"
        body = {"amount": 1500, "currency": "EUR", "reference": key,
                "payment_method": {"type": "card", "token": token}}  # fmt: skip
        answers: list[Answer] = []
        with self._lock:
            self.keys[key], self.bodies[key] = answers, json.dumps(body).encode()
        self.retry(session, key, answers, verify=False)
        return answers

    def retry(self, session, key: str, answers: list[Answer], verify: bool) -> None:
        """Tries with the same key until a final answer, at most 1 + len(RETRY_DELAYS) times."""
        for delay in (*RETRY_DELAYS, None):
            answer = self._post_payment(session, key, verify)
            answers.append(answer)
            if answer.final or delay is None:
                return
            time.sleep(delay)

    def replay_all(self, workers: int) -> None:
        """One more try of every key after recovery: a final answer must be the same again."""

        def replay(key):
            self.retry(requests.Session(), key, self.keys[key], verify=True)

        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(replay, list(self.keys)))

    def _post_payment(self, session, key: str, verify: bool) -> Answer:
        headers = {"Authorization": f"Bearer {self.secret}", "Idempotency-Key": key,
                   "Content-Type": "application/json"}  # fmt: skip
        sent = time.time()
        try:
            response = session.post(
                f"{self.base}/payments", data=self.bodies[key], headers=headers,
                timeout=REQUEST_TIMEOUT,
            )  # fmt: skip
        except requests.Timeout:
            return Answer(time.time(), time.time() - sent, failure="timeout", verify=verify)
        except requests.RequestException:
            return Answer(time.time(), time.time() - sent, failure="connection", verify=verify)
        payload = parse(response)
        return Answer(
            time.time(),
            time.time() - sent,
            status=response.status_code,
            payment_id=payload.get("id", "") if response.status_code < 300 else "",
            code=(payload.get("error") or {}).get("code", ""),
            verify=verify,
        )

    def _tokenise(self, session) -> str | None:
        card = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2040, "cvc": "123"}
        for delay in (*RETRY_DELAYS[:3], None):
            try:
                response = session.post(
                    f"{self.base}/sandbox/tokens", json=card, timeout=REQUEST_TIMEOUT,
                    headers={"Authorization": f"Bearer {self.publishable}"},
                )  # fmt: skip
                if response.status_code == 201:
                    return response.json()["id"]
            except requests.RequestException:
                pass
            if delay is None or self._stopping.is_set():
                return None
            time.sleep(delay)
        return None


def parse(response: requests.Response) -> dict:
    try:
        payload = response.json()
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}


# --- scenarios --------------------------------------------------------------------------------


@dataclass
class Rig:
    service: Service
    redis: OwnRedis
    redis_proxy: FaultProxy
    pg_proxy: FaultProxy
    receiver: Receiver


def restart_after(rig: Rig, name: str, delay: float) -> None:
    rig.service.kill(name)
    time.sleep(delay)
    rig.service.start(name)


def kill_web_worker(rig: Rig, delay: float) -> dict:
    """kill -9 one granian worker; if granian then exits, restart it (as a supervisor would)."""
    workers = rig.service.web_workers()
    os.kill(workers[0], signal.SIGKILL)
    time.sleep(delay)
    notes = {"web_workers_before": len(workers), "web_main_survived": rig.service.alive("web")}
    if not rig.service.alive("web"):
        rig.service.start("web")
        wait_until(rig.service.serving, 30)
    notes["web_workers_after"] = len(rig.service.web_workers())
    return notes


def redis_down(rig: Rig, duration: float) -> dict:
    rig.redis.kill()
    time.sleep(duration)
    rig.redis.start()  # empty: a Redis without persistence loses its queues
    return {}


def redis_hung(rig: Rig, duration: float) -> dict:
    rig.redis_proxy.set_mode("hang")
    time.sleep(duration)
    rig.redis_proxy.set_mode("pass")
    return {}


def postgres_cut(rig: Rig, duration: float) -> dict:
    rig.pg_proxy.set_mode("refuse")
    cut = rig.pg_proxy.cut()
    time.sleep(duration)
    rig.pg_proxy.set_mode("pass")
    return {"connections_cut": cut}


def receiver_fails(rig: Rig, duration: float) -> dict:
    rig.receiver.reply = Reply(status=500, body=b"down")
    time.sleep(duration)
    rig.receiver.reply = Reply()
    return {}


def no_fault(rig: Rig, duration: float) -> dict:
    time.sleep(duration)
    return {}


def process_killer(name: str):
    def kill(rig: Rig, delay: float) -> dict:
        restart_after(rig, name, delay)
        return {}

    return kill


SCENARIOS = {
    "baseline": no_fault,
    "web-kill": kill_web_worker,
    "worker-kill": process_killer("worker"),
    "webhooks-kill": process_killer("webhooks-test"),  # the pool of the clients' test mode
    "beat-kill": process_killer("beat"),
    "redis-down": redis_down,
    "redis-hung": redis_hung,
    "pg-cut": postgres_cut,
    "receiver-fail": receiver_fails,
}


def payments_by_key(scenario: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    rows = query(
        "SELECT reference, id FROM payments_payment WHERE reference LIKE %s", f"{scenario}-%"
    )
    for reference, payment_id in rows:
        found.setdefault(reference, []).append(payment_id)
    return found


def expected_events(payment_ids: list[str]) -> set[str]:
    rows = query(
        "SELECT id FROM events_event WHERE resource_id = ANY(%s) AND type LIKE 'payment.%%'",
        payment_ids,
    )
    return {row[0] for row in rows}


def deliveries(receiver: Receiver) -> dict[str, float]:
    """Event id -> when the receiver first answered 2xx for it."""
    first: dict[str, float] = {}
    for request in list(receiver.requests):
        if request.status < 300:
            first.setdefault(request.headers.get("Service-Event-Id"), request.at)
    return first


def probe_until_paid(clients: Clients, scenario: str, bound: float) -> None:
    """No payment succeeded after the fault: pay one at a time until one does (bounded)."""
    session, deadline = requests.Session(), time.monotonic() + bound
    while time.monotonic() < deadline:
        if any(a.status == 201 for a in clients.pay(session, scenario)):
            return
        time.sleep(0.5)


def run_scenario(rig: Rig, clients: Clients, name: str, timing: Timing, load: int) -> dict:
    receiver_scenario = name == "receiver-fail"
    fault_seconds = timing.receiver_fault if receiver_scenario else timing.fault
    clients.keys, clients.bodies, clients.token_failures = {}, {}, 0
    print(f"-- {name}: load {timing.before:.0f} s, fault {fault_seconds:.0f} s, "
          f"load {timing.after:.0f} s", flush=True)  # fmt: skip
    clients.start(name, count=load, pause=0.05)
    time.sleep(timing.before)
    fault_started = time.time()
    notes = SCENARIOS[name](rig, fault_seconds)
    fault_ended = time.time()
    time.sleep(timing.after)
    notes["died_on_their_own"] = rig.service.revive_the_dead()
    clients.stop()
    if not any(a.status == 201 and a.at >= fault_ended for a in clients.answers()):
        probe_until_paid(clients, name, timing.recover)
    if any(not any(a.final for a in answers) for answers in clients.keys.values()):
        # A request that died holds its key until its lease ends: replay after that.
        time.sleep(max(0.0, fault_ended + timing.lease + 1 - time.time()))
    clients.replay_all(workers=load)
    found = payments_by_key(name)
    expected = expected_events([pid for pids in found.values() for pid in pids])
    events_bound = timing.receiver_events if receiver_scenario else timing.events
    wait_until(lambda: expected <= deliveries(rig.receiver).keys(), events_bound, step=0.5)
    figures = summarise(name, clients.keys, found, expected, deliveries(rig.receiver), fault_ended)
    figures.update(
        fault_seconds=round(fault_ended - fault_started, 1),
        token_failures=clients.token_failures,
        notes=notes,
        examples=examples(clients.keys, found),
    )
    return figures


def examples(keys: dict[str, list[Answer]], found: dict[str, list[str]], limit: int = 5) -> dict:
    """A few offending keys with everything they got, to start an investigation from."""
    shown = [key for key, answers in keys.items() if differs(answers)]
    shown += [
        key
        for key, pids in found.items()
        if key not in shown and (len(pids) > 1 or unacknowledged(keys.get(key, []), pids))
    ]
    return {
        key: {"answers": [asdict(a) for a in keys.get(key, [])], "payments": found.get(key, [])}
        for key in shown[:limit]
    }


# --- the run ----------------------------------------------------------------------------------


def service_env(pg_port: int, redis_port: int, ca_file: Path, lease: float) -> dict:
    return {
        **os.environ,
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{pg_port}/{DATABASE}",
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "DEBUG": "false",
        "DJANGO_SECRET_KEY": "faults-secret-key",
        "API_KEY_PEPPER": "faults-pepper",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(ROOT),
        "LOG_LEVEL": "WARNING",
        # The load is bounded by the clients' pace; the limiter is not what is under test.
        "API_RATE_LIMIT_TEST_RATE": "100000",
        "API_RATE_LIMIT_TEST_BURST": "100000",
        "IDEMPOTENCY_LEASE_SECONDS": str(int(lease)),
        "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        "WEBHOOK_CA_BUNDLE": str(ca_file),
    }


def manage(env: dict, *argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *argv], cwd=ROOT, env=env, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    return done.stdout


def set_up(rig: Rig, env: dict) -> Clients:
    manage(env, "migrate", "--noinput", "-v0")
    keys = json.loads(manage(env, "create_merchant", "--name", "Faults", "--email",
                             "ops@faults.test", "--json"))["keys"]["test"]  # fmt: skip
    for name in rig.service.commands:
        rig.service.start(name)
    if not wait_until(rig.service.serving, 60):
        raise SystemExit("the web server did not start; see its log")
    endpoint = requests.post(
        f"{rig.service.base}/webhook-endpoints",
        headers={"Authorization": f"Bearer {keys['secret']}"},
        json={"url": rig.receiver.url(), "enabled_events": ["payment.*"]},
        timeout=10,
    )
    endpoint.raise_for_status()
    return Clients(rig.service.base, keys["secret"], keys["publishable"])


def git_commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short phases (~3 minutes)")
    parser.add_argument("--only", nargs="+", choices=list(SCENARIOS), help="these scenarios")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--json", default=str(ROOT / "var" / "faults.json"))
    args = parser.parse_args()
    timing = QUICK if args.quick else FULL
    work = Path(tempfile.mkdtemp(prefix="faults-", dir=ROOT / "var"))
    (work / "logs").mkdir()
    ca = trustme.CA()
    ca_file = work / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))

    recreate_database()
    redis = OwnRedis(work / "logs")
    redis.start()
    redis_proxy = FaultProxy(("127.0.0.1", redis.port))
    pg_proxy = FaultProxy(("127.0.0.1", 5432))
    env = service_env(pg_proxy.port, redis_proxy.port, ca_file, timing.lease)
    receiver = Receiver(ca)
    # A webhooks worker killed mid-delivery leaves a reply unsent: expected, not a traceback.
    receiver.server.handle_error = lambda request, client_address: None
    rig = Rig(Service(env, work, free_port()), redis, redis_proxy, pg_proxy, receiver)
    started = time.time()
    try:
        clients = set_up(rig, env)
        results = [
            run_scenario(rig, clients, name, timing, args.clients)
            for name in (args.only or SCENARIOS)
        ]
    finally:
        rig.service.stop()
        rig.receiver.close()
        redis.kill()
        drop_database()
    report = {
        "run_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "mode": "quick" if args.quick else "full",
        "clients": args.clients,
        "timing": asdict(timing),
        "seconds": round(time.time() - started),
        "logs": str(work / "logs"),
        "scenarios": results,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    print(table(results))
    broken = {row["scenario"]: row["broken"] for row in results if row["broken"]}
    print(f"{report['seconds']} s; JSON in {args.json}; process logs in {report['logs']}")
    for name, checks in broken.items():
        print(f"BROKEN {name}: {', '.join(checks)}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
