"""Benchmark: one merchant's live traffic while another merchant (or anyone) attacks the API.

Starts the Procfile's web process (granian, 2 workers x 4 threads) on PostgreSQL + Redis with
the production limits, and two merchants. "bob" is live: his server takes real live payments
(`POST /v1/payments` with his live key on live tokens, one every `--pay-every` seconds) through
the Stripe connector with localstripe as Stripe (started as the suite starts it, his connector
account and route made with the operator's commands, docs/going-live.md), and reads
(`GET /v1/payments`, 2 clients, one request every 20 ms each); his customers create a token
with his publishable key every 250 ms from their own address. Bob's latency, his reads' and
his payments' apart, and how long his payments' live events wait for their first webhook
delivery attempt (his endpoint: an HTTPS receiver on loopback, bench/https_receiver.py; the
Procfile's `webhooks` line delivers) are measured alone, then during each attack, one at a
time, then all together, alone again after each:

- bodies: alice's test key posts worst-case 256 KiB bodies (bench_card_guard's) in a loop;
- live bodies: the same with alice's live key;
- publishable: one address floods bob's (public) publishable key with token creations;
- unknown keys: one address floods made-up secret keys;
- many sources: the same from 1,016 addresses in turn, a new connection each time (each
  address under every per-address limit);
- admin logins: made-up admin sign-ins from those 1,016 addresses in turn, each a password
  hash, at the back office's own process (the Procfile's `admin` line, as every shipped
  process model serves it: docs/production.md).

Each attack is `--connections` closed-loop keep-alive connections from a second process, from
the source address 127.0.0.7 (a proxy tells it from bob's 127.0.0.1); bob is measured from a
third. `--shape` says what stands in front of the service:
- `direct`: nothing, the bench talks to granian;
- `proxy`: haproxy with the app's deploy/haproxy.cfg as it is written, one pool behind it;
- `routed` (the default): the same, plus the test-mode pool (`serve.py web-test`: 1 worker,
  no thread kept for live keys),
  named to haproxy as NODE1_TEST: test keys, unknown keys and large bodies go to it
  (docs/admission.md "Test mode on its own processes"), at the lowest CPU weight as
  deployed (`--test-pool-weight`; niceness 10 where no cgroup can be made). An app whose
  haproxy.cfg has no such rule serves as `proxy`.
The bench sends `X-Forwarded-For` (the attacker's address, bob's customers' own), which the
proxy passes on, and the service trusts 127.0.0.1 as its proxy (API_TRUSTED_PROXIES).
Reported: bob's p50 and p99 and their ratios to the mean of the "alone" phases just before and
after (the goal: p99 <= 2x), bob's customers' token creations that succeeded, and what the
attackers were answered.

    make bench                               # every bench/bench_*.py
    .venv/bin/python bench/bench_neighbours.py --seconds 10
    .venv/bin/python bench/bench_neighbours.py --app /path/to/other/checkout   # before/after
    .venv/bin/python bench/bench_neighbours.py --shape proxy    # the same without the test pool
    .venv/bin/python bench/bench_neighbours.py --only "unknown keys"   # repeatable

BENCH_DATABASE_URL (a database it may drop and recreate) and BENCH_REDIS_URL as
bench_payments.py.
"""

import argparse
import itertools
import json
import os
import secrets
import shutil
import signal
import string
import subprocess
import sys
import threading
import time
from collections import Counter
from http.client import HTTPConnection
from multiprocessing import get_context
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import psycopg  # noqa: E402
from bench_card_guard import BODIES  # noqa: E402
from bench_payments import (  # noqa: E402
    PYTHON,
    ROOT,
    KeepAliveClient,
    add_service_arguments,
    create_tokens,
    go_live,
    manage,
    production_env,
    recreate_database,
    summary,
)
from https_receiver import CA_FILE, start_healthy  # noqa: E402

from tests.support.localstripe import running_localstripe  # noqa: E402

ATTACKER, CUSTOMER = "203.0.113.7", "198.51.100.20"
ATTACKER_SOURCE = "127.0.0.7"  # the attackers' connections' own address (any 127.x is ours)
TOKENS = "/v1/sandbox/tokens"
WORST = [body for name, body in BODIES.items() if name.startswith("worst:")]
TOKEN_BODY = json.dumps(
    {"number": "4242424242424242", "exp_month": 12, "exp_year": 2099, "cvc": "123"}
).encode()

SETUP = """
import json, django
django.setup()
from accounts.services import merchant_create
keys = {}
for name in ("alice", "bob"):
    made = merchant_create(name=name, email=f"{name}@example.test")
    keys[name] = {mode: {kind: issued.secret for kind, issued in kinds.items()}
                  for mode, kinds in made.keys.items()}
    keys[name]["merchant"] = made.merchant.id
print(json.dumps(keys))
"""


def service_env(args) -> dict:
    return {
        **production_env(args),
        "API_TRUSTED_PROXIES": "127.0.0.1/32",  # the bench (or haproxy before it) is the proxy
        "WEB_PORT": str(args.port if args.shape == "direct" else args.port + 1),
        "VENV": str(ROOT / ".venv"),
        "ADMIN_PORT": str(args.port + 4),
        # Bob's endpoint is a receiver on loopback, its certificate of the bench's own CA.
        "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        "WEBHOOK_CA_BUNDLE": str(CA_FILE),
    }


def start_service(args, env: dict) -> list[subprocess.Popen]:
    """The web pool, and by `--shape` the test-mode pool and haproxy in front: `args.port`
    is where the bench sends every request."""
    # The back office yields the cores as the test pool does (docs/production.md "Processes").
    admin_group = cpu_group("svc_bench_admin", args.test_pool_weight)
    admin = start_web(env, args.port + 4, args.test_pool_nice, admin_group, line="admin")
    started = [start_web(env, int(env["WEB_PORT"])), admin]
    started.append(start_line(env, "webhooks"))  # live deliveries: bob's
    if args.shape == "direct":
        return started
    proxy_env = {"LB_BIND": f"127.0.0.1:{args.port}", "LB_PEER": f"127.0.0.1:{args.port + 3}"}
    proxy_env["NODE1"] = f"127.0.0.1:{args.port + 1}"
    proxy_env["NODE2"] = proxy_env["NODE1"]  # one pool: the Procfile's two workers
    if args.shape == "routed":
        test_env = {**env, "WEB_PORT": str(args.port + 2)}
        group = cpu_group("svc_bench_test_pool", args.test_pool_weight)
        pool = start_web(test_env, args.port + 2, args.test_pool_nice, group, line="web-test")
        started.append(pool)
        proxy_env["NODE1_TEST"] = f"127.0.0.1:{args.port + 2}"
    config = Path(env["PYTHONPATH"]) / "deploy" / "haproxy.cfg"
    started.append(
        subprocess.Popen(
            [shutil.which("haproxy"), "-db", "-f", str(config)],
            env={**os.environ, **proxy_env},
            start_new_session=True,
        )
    )
    wait_until_serving(args.port)
    time.sleep(3)  # haproxy's health checks (rise 2, 1 s apart) find the pools up
    return started


def wait_until_serving(port: int) -> bool:
    for _ in range(300):
        try:
            conn = HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/healthz")
            conn.getresponse().read()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def start_web(
    env: dict, port: int, niceness: int = 0, group: Path | None = None, line: str = "web"
) -> subprocess.Popen:
    """The Procfile's `web` (or `line`) line as it is written, in its own process group, at
    `niceness` or in the cgroup `group` (a lower CPU share, as a deployment gives the test
    pool: docs/production.md)."""
    web = start_line(env, line, niceness, group)
    if wait_until_serving(port):
        return web
    stop_web(web)
    raise SystemExit("the web process did not start")


def start_line(
    env: dict, line: str, niceness: int = 0, group: Path | None = None
) -> subprocess.Popen:
    """The Procfile's `line` as it is written, in its own process group; `web-test`, which
    the Procfile has not (`make run` has no proxy), as a deployment starts it."""
    procfile = (Path(env["PYTHONPATH"]) / "Procfile").read_text().splitlines()
    procfile.append("web-test: ${VENV:-.venv}/bin/python scripts/serve.py web-test")
    command = next(text for text in procfile if text.startswith(f"{line}:")).split(":", 1)[1]
    return subprocess.Popen(
        ["nice", "-n", str(niceness), "bash", "-c", "exec " + command.strip()],
        cwd=env["PYTHONPATH"],
        env=env,
        start_new_session=True,
        # Joined before exec, so granian's workers are born in it.
        preexec_fn=(lambda: (group / "cgroup.procs").write_text(str(os.getpid())))
        if group
        else None,
    )


CGROUP_V1, CGROUP_V2 = Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup")


def cgroup_cpu_setting() -> tuple[Path, str] | None:
    """(the cgroup tree, the CPU weight's file) when this process may make a cgroup with a
    CPU weight (root, or a delegated tree), else None."""
    if (CGROUP_V1 / "cpu.shares").exists() and os.access(CGROUP_V1, os.W_OK):
        return CGROUP_V1, "cpu.shares"
    controllers = CGROUP_V2 / "cgroup.subtree_control"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        return (CGROUP_V2, "cpu.weight") if os.access(CGROUP_V2, os.W_OK) else None
    return None


def cpu_group(name: str, weight: int) -> Path | None:
    """A cgroup of its own at this CPU weight (cgroup v2's `cpu.weight` scale, 1-10000, where
    every other process weighs 100, as systemd's `CPUWeight=`; cgroup v1's `cpu.shares` are
    scaled to it), or None for weight 0. Unlike niceness, the weight is the whole pool's,
    however many threads it runs."""
    if not weight:
        return None
    found = cgroup_cpu_setting()
    if found is None:
        raise SystemExit("--test-pool-weight: no cgroup CPU controller this user may write to")
    tree, setting = found
    value = max(2, weight * 1024 // 100) if setting == "cpu.shares" else weight
    group = tree / name
    group.mkdir(exist_ok=True)
    (group / setting).write_text(str(value))
    return group


# --- load (each in a process of its own) ------------------------------------------------------


def loop(port: int, stop, pause: float, send, source="127.0.0.1") -> tuple[list[float], Counter]:
    """send(client) -> status, until `stop` is set, `pause` seconds apart; reconnects when the
    server closes the connection. -> (latencies, statuses)."""
    latencies, statuses, client = [], Counter(), None
    while not stop.is_set():
        started = time.perf_counter()
        try:
            client = client or KeepAliveClient(port, source)
            status = send(client)
        except OSError:
            client, status = None, "closed"
        latencies.append(time.perf_counter() - started)
        statuses[status] += 1
        if pause:
            stop.wait(pause)
    return latencies, statuses


def in_threads(count: int, work) -> list:
    results = [None] * count

    def run(index):
        results[index] = work(index)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def bob(port: int, keys: dict, tokens: list[str], pay_every: float, ready, stop, out) -> None:
    """Bob's live reads (2 clients), his live payments on `tokens` (1 client) and his
    customers' token creations (1 client)."""
    live = {"Authorization": f"Bearer {keys['live']['secret']}"}
    spend = iter(tokens)
    customer = {
        "Authorization": f"Bearer {keys['test']['publishable']}",
        "Content-Type": "application/json",
        "X-Forwarded-For": CUSTOMER,
    }

    def token(client):
        status, body = client.post(TOKENS, customer, TOKEN_BODY)
        return "shed" if status == 429 and b"busy" in body else status  # test mode: by design

    def pay(client):
        token = next(spend, None)
        if token is None:
            return "no token left"
        body = {"amount": 1000, "currency": "eur", "reference": "bob",
                "payment_method": {"type": "card", "token": token}}  # fmt: skip
        headers = {**live, "Content-Type": "application/json", "Idempotency-Key": token}
        return client.post("/v1/payments", headers, json.dumps(body).encode())[0]

    def work(index):
        if index == 2:
            return loop(port, stop, 0.25, token)
        if index == 3:
            return loop(port, stop, pay_every, pay)
        return loop(port, stop, 0.02, lambda c: c.request("GET", "/v1/payments", live)[0])

    ready.set()
    results = in_threads(4, work)
    reads = results[0][0] + results[1][0]
    out.put((reads, dict(results[0][1] + results[1][1]), dict(results[2][1]), *results[3]))


def attack(port: int, kinds: list[str], keys: dict, connections: int, ready, stop, out) -> None:
    senders = {
        "bodies": bodies_sender(keys["alice"]["test"]["secret"]),
        "live bodies": bodies_sender(keys["alice"]["live"]["secret"]),
        "publishable": publishable_sender(keys["bob"]["test"]["publishable"]),
        "unknown keys": unknown_key_sender(),
        "many sources": many_sources_sender(port, unknown_key_sender()),
        "admin logins": many_sources_sender(port + 4, admin_login_sender()),
    }
    plan = [kind for kind in kinds for _ in range(connections)]
    ready.set()
    results = in_threads(
        len(plan), lambda index: loop(port, stop, 0, senders[plan[index]], ATTACKER_SOURCE)[1]
    )
    statuses = {kind: Counter() for kind in kinds}
    for kind, counted in zip(plan, results, strict=True):
        statuses[kind] += counted
    out.put({kind: dict(counted) for kind, counted in statuses.items()})


def bodies_sender(secret: str):
    bodies = itertools.cycle(WORST)
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    return lambda client: client.post("/v1/payments", headers, next(bodies))[0]


def publishable_sender(publishable: str):
    headers = {
        "Authorization": f"Bearer {publishable}",
        "Content-Type": "application/json",
        "X-Forwarded-For": ATTACKER,
    }
    return lambda client: client.post(TOKENS, headers, TOKEN_BODY)[0]


def unknown_key_sender():
    alphabet = string.ascii_letters + string.digits

    def send(client):
        made_up = "svc_sk_live_" + "".join(secrets.choice(alphabet) for _ in range(20))
        headers = {"Authorization": f"Bearer {made_up}", "X-Forwarded-For": ATTACKER}
        return client.request("GET", "/v1/payments", headers)[0]

    return send


def admin_login_sender():
    """A made-up sign-in at the back office's login form. The CSRF token is the cookie's
    secret itself (Django accepts the unmasked secret), so no page is read first."""
    alphabet = string.ascii_letters + string.digits

    def send(client):
        made_up = "".join(secrets.choice(alphabet) for _ in range(32))
        headers = {
            "Cookie": f"csrftoken={made_up}",
            "Content-Type": "application/x-www-form-urlencoded",
        }
        form = f"csrfmiddlewaretoken={made_up}&username=u{made_up[:8]}&password={made_up}"
        return client.post("/admin/login/", headers, form.encode())[0]

    return send


def many_sources_sender(port: int, send):
    """`send` on a new connection each time, from the next of 1,016 source addresses (the
    loopback's 127.0.x.y): each address stays under the proxy's and the service's
    per-address limits while the whole flood does not."""
    sources = itertools.cycle(f"127.0.{a}.{b}" for a in range(1, 5) for b in range(1, 255))

    def send_from_next(_client):
        client = KeepAliveClient(port, next(sources))
        try:
            return send(client)
        finally:
            client.sock.close()

    return send_from_next


def phase(args, keys: dict, kinds: list[str], tokens: list[str]) -> dict:
    """Bob measured for `--seconds` (once his process runs), during the attack `kinds`,
    paying with `tokens`."""
    context = get_context("spawn")
    stop, bob_out, attack_out = context.Event(), context.Queue(), context.Queue()
    attacker = None
    if kinds:
        attacking = context.Event()
        attacker = context.Process(
            target=attack,
            args=(args.port, kinds, keys, args.connections, attacking, stop, attack_out),
        )
        attacker.start()
        attacking.wait(120)
        time.sleep(args.warmup)
    began = time.time()
    measuring = context.Event()
    measurer = context.Process(
        target=bob,
        args=(args.port, keys["bob"], tokens, args.pay_every, measuring, stop, bob_out),
    )
    measurer.start()
    measuring.wait(120)
    time.sleep(args.seconds)
    stop.set()
    ended = time.time()
    latencies, bob_statuses, customers, payments, paid = bob_out.get()
    measurer.join()
    attacked = attack_out.get() if attacker else {}
    if attacker:
        attacker.join()
    time.sleep(args.cooldown)  # in-flight work and buckets settle between phases
    _, p50, p99 = summary(latencies, args.seconds)
    _, pay_p50, pay_p99 = summary(payments, args.seconds)
    return {
        **{"p50": p50, "p99": p99, "pay p50": pay_p50, "pay p99": pay_p99},
        "webhooks": first_attempts(args.database_url, keys["bob"]["merchant"], began, ended),
        **{"bob": bob_statuses, "paid": dict(paid), "customers": customers, "attack": attacked},
    }


FIRST_ATTEMPTS = """
SELECT extract(epoch FROM min(a.attempted_at) - e.created)
FROM events_event e LEFT JOIN webhooks_attempt a ON a.event_id = e.id
WHERE e.merchant_id = %s AND e.livemode AND e.created >= to_timestamp(%s)
  AND e.created < to_timestamp(%s)
GROUP BY e.id
"""


def first_attempts(database_url: str, merchant_id: str, began: float, ended: float) -> dict:
    """Bob's live events of the phase: how long each waited for its first delivery attempt
    (p50, p99, the worst, in ms) and how many had none yet (after the cooldown)."""
    with psycopg.connect(database_url) as connection:
        waits = [row[0] for row in connection.execute(FIRST_ATTEMPTS, [merchant_id, began, ended])]
    attempted = sorted(float(wait) * 1000 for wait in waits if wait is not None)
    if not attempted:
        return {"events": len(waits), "unattempted": len(waits)}
    _, p50, p99 = summary([ms / 1000 for ms in attempted], 1)
    return {
        **{"events": len(waits), "unattempted": len(waits) - len(attempted)},
        **{"p50": p50, "p99": p99, "worst": attempted[-1]},
    }


ATTACKS = [
    ("bodies", ["bodies"]),
    ("live bodies", ["live bodies"]),
    ("publishable", ["publishable"]),
    ("unknown keys", ["unknown keys"]),
    ("many sources", ["many sources"]),
    ("admin logins", ["admin logins"]),
    ("all together", ["bodies", "live bodies", "publishable", "unknown keys"]),
]


def phases(only: list[str] | None) -> list[tuple[str, list[str]]]:
    """Bob alone before and after each attack (of `only`, when given): on a shared machine the
    load drifts, so each attack is compared with the mean of the two baselines around it."""
    attacks = [attack for attack in ATTACKS if not only or attack[0] in only]
    return [("alone", [])] + [phase for attack in attacks for phase in (attack, ("alone", []))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_service_arguments(parser, "svc_bench_neighbours")
    parser.add_argument("--app", default=str(ROOT), help="the checkout whose code is served")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--seconds", type=float, default=10.0, help="per phase")
    parser.add_argument("--connections", type=int, default=4, help="per attack")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--cooldown", type=float, default=3.0)
    parser.add_argument(
        "--pay-every", type=float, default=0.2, help="seconds between bob's live payments"
    )
    parser.add_argument("--shape", choices=["direct", "proxy", "routed"], default="routed")
    parser.add_argument(
        "--test-pool-nice", type=int, default=10, help="the test pool's niceness, without a weight"
    )
    parser.add_argument(
        "--test-pool-weight",
        type=int,
        default=1 if cgroup_cpu_setting() else 0,
        help="the routed test pool's and the admin's cgroup CPU weight (1-10000; others 100), "
        "as deployed "
        "(docs/production.md); default 1 where a cgroup can be made, else 0: none, and "
        "--test-pool-nice instead",
    )
    parser.add_argument(
        "--only", action="append", choices=[name for name, _ in ATTACKS], help="repeatable"
    )
    args = parser.parse_args()

    env = service_env(args)
    recreate_database(args.database_url)
    manage(env, "migrate", "--no-input")
    done = subprocess.run(
        [PYTHON, "-c", SETUP], cwd=env["PYTHONPATH"], env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(done.stderr)
    keys = json.loads(done.stdout)
    # A SIGTERM (a background run cannot be interrupted) stops what was started, too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    planned = phases(args.only)
    with running_localstripe() as emulator:
        bob_id = keys["bob"]["merchant"]
        account_id = go_live(env, bob_id, emulator.url)
        receiver_port, receiver = start_healthy()
        # Bob pays at most once per `--pay-every` while a phase runs, on a token of its own.
        per_phase = int(args.seconds / args.pay_every) + 1
        tokens = create_tokens(env, bob_id, per_phase * len(planned), account_id)
        started = start_service(args, env)
        try:
            subscribe(args.port, keys["bob"]["live"]["secret"], receiver_port)
            results = []
            for number, (name, kinds) in enumerate(planned):
                mine = tokens[number * per_phase : (number + 1) * per_phase]
                results.append((name, phase(args, keys, kinds, mine)))
                print(f"{name}: done", file=sys.stderr, flush=True)
            report(args, results)
        finally:
            for process in reversed(started):
                stop_web(process)
            receiver.terminate()


def subscribe(port: int, live_secret: str, receiver_port: int) -> None:
    """Bob's live endpoint, subscribed to every event, at the bench's receiver."""
    body = json.dumps({"url": f"https://localhost:{receiver_port}/hooks", "enabled_events": ["*"]})
    headers = {"Authorization": f"Bearer {live_secret}", "Content-Type": "application/json"}
    status, answer = KeepAliveClient(port).post("/v1/webhook-endpoints", headers, body.encode())
    if status != 201:
        raise SystemExit(f"bob's endpoint: {status} {answer[:300]!r}")


def stop_web(web: subprocess.Popen) -> None:
    """SIGTERM to the supervisor, which passes it to granian (a signal to the whole group
    would reach granian's workers first, and granian would respawn them); haproxy stops on
    it too."""
    web.send_signal(signal.SIGTERM)
    try:
        web.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(web.pid, signal.SIGKILL)


def report(args, results) -> None:
    print(
        f"app: {args.app}; shape {args.shape}; {args.seconds:.0f} s a phase, "
        f"{args.connections} connections each; the test pool and the admin at "
        + (
            f"CPU weight {args.test_pool_weight}"
            if args.test_pool_weight
            else f"nice {args.test_pool_nice}"
        )
    )
    print(f"load average: {os.getloadavg()[0]:.1f}")
    print("| phase | reads p50 / p99 ms | reads p99 ratio | payments p50 / p99 ms | "
          "payments p99 ratio | webhook first attempt p50 / p99 / worst ms | "
          "reads' answers | payments' answers | "
          "customers' tokens (201 of all) | attackers' answers |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for index, (name, result) in enumerate(results):
        customers = result["customers"]
        around = () if name == "alone" else (results[index - 1][1], results[index + 1][1])
        print(
            f"| {name} | {result['p50']:.1f} / {result['p99']:.1f} "
            f"| {ratio(result, around, 'p99')} "
            f"| {result['pay p50']:.0f} / {result['pay p99']:.0f} "
            f"| {ratio(result, around, 'pay p99')} | {waited(result['webhooks'])} "
            f"| {statuses(result['bob'])} | {statuses(result['paid'])} "
            f"| {customers.get(201, 0)} of {sum(customers.values())}{shed_note(customers)} "
            f"| {'; '.join(f'{kind}: {statuses(s)}' for kind, s in result['attack'].items())} |"
        )


def waited(webhooks: dict) -> str:
    figures = [f"{webhooks[p]:.0f}" for p in ("p50", "p99", "worst") if p in webhooks]
    missing = f" ({webhooks['unattempted']} of {webhooks['events']} not yet)"
    return " / ".join(figures) + (missing if webhooks["unattempted"] else "")


def ratio(result: dict, around: tuple, figure: str) -> str:
    """`figure` over its mean in the "alone" phases `around` it (none: an alone phase)."""
    if not around:
        return ""
    return f"{result[figure] / (sum(base[figure] for base in around) / 2):.2f}"


def shed_note(customers: dict) -> str:
    return f" ({customers['shed']} shed)" if "shed" in customers else ""


def statuses(counted: dict) -> str:
    return ", ".join(f"{status}: {count}" for status, count in sorted(counted.items(), key=str))


if __name__ == "__main__":
    main()
