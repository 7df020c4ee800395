"""Instructions per payment create, counted by valgrind: the app's work per create as a
figure that does not move with the machine's load.

Time on this shared 2-core machine moves by ±20-30% between runs minutes apart (and up to 2x
from day to day), so a cut of a few per cent cannot be seen in CPU milliseconds. The count of
instructions a process executes does not depend on what else runs: cachegrind counts them
(no cache simulation), deterministic to well under 1% between runs of the same code.

What runs: one process calling the WSGI application granian serves (`config.wsgi`) as a
server calls it (no socket between client and app; the whole Django and DRF path, middleware
and the end of the request included: the connection's return to the pool), `POST
/v1/payments` with automatic capture on test tokens and a fresh Idempotency-Key each, as
bench_payments.py sends it (the claim and the stored answer included). Each side
(`--app`, a checkout run with this one's venv, on a database of its own migrated by its own
code; default this one) is counted twice per round: `--warm` creates, then `--warm` and
`--creates` more; the difference over `--creates` is its instructions per create, start-up
and first requests (imports, prepared statements) left out. Sides alternate, `--rounds` times.
PostgreSQL's and Redis's own work is not counted (other processes: bench_payments.py measures
them), nor granian's.

    .venv/bin/python bench/bench_instructions.py                       # this checkout
    git worktree add ../before <commit>
    .venv/bin/python bench/bench_instructions.py --app ../before --app .

valgrind is Debian's (`apt-get install valgrind`); a round is ~30 s per side and run.

`--cpu` times the same process instead of counting it: its user and system CPU (the kernel's
work for its round trips to PostgreSQL and Redis included, which the count leaves out), the
same difference of two runs per create. It moves with the machine's load, as every time does,
but sees no web server and no load generator: the app's own CPU per create, sides alternating
in one sitting (`--creates 2000`: start-up's spread then moves a create's figure ~1%).

    .venv/bin/python bench/bench_instructions.py --cpu --creates 2000 --app ../before --app .
"""

import argparse
import io
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import bench_payments as bench

# Counts every instruction, simulates no cache: the fastest of valgrind's counting tools.
VALGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
COUNT = re.compile(r"I\s+refs:\s+([\d,]+)")


def creates(secret: str, tokens: list[str]) -> None:
    """The measured process: one create per token, each answered 201. Runs the code of its
    working directory (the checkout counted), not this one's."""
    sys.path[:] = [os.getcwd()] + [path for path in sys.path if path != str(bench.ROOT)]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from config.wsgi import application  # what granian serves

    for token in tokens:
        body = {"amount": 1000, "currency": "eur", "reference": "bench",
                "payment_method": {"type": "card", "token": token}}  # fmt: skip
        status, answer = served(application, secret, json.dumps(body).encode())
        if not status.startswith("201"):
            raise SystemExit(f"create answered {status}: {answer[:300]!r}")
    request_log_writer().flush()


def request_log_writer():
    """The request log's writer of the checkout counted (`api.requestlog` in older ones).
    Its thread is off in the counted runs (REQUEST_LOG_FLUSH_SECONDS=0): it ran a round every
    second of the run's wall time, which valgrind stretches by the machine's load, so how
    many rounds a run counted moved with that load. The run writes its entries in one flush
    at its end instead: each create's row counted, no round's."""
    try:
        from api.request_recorder import writer
    except ImportError:
        from api.requestlog import writer
    return writer


def served(application, secret: str, body: bytes) -> tuple[str, bytes]:
    """`POST /v1/payments` through the WSGI application as a server calls it."""
    headers = {
        "HTTP_AUTHORIZATION": f"Bearer {secret}",
        "HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4()),  # a fresh one each, as bench_payments.py
        "CONTENT_TYPE": "application/json",
    }
    return called(application, "POST", "/v1/payments", body, headers)


def called(application, method: str, path: str, body: bytes = b"", headers=None):
    """-> (status, answer) of one request through the WSGI application as a server calls it:
    the environ a server builds (`headers` as its HTTP_* and CONTENT_* keys), the answer's
    chunks read, then close() (Django's request_finished: the connection's return to the
    pool, as after every request in production)."""
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1:8000",
        **(headers or {}),
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.url_scheme": "http",
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    started = []
    result = application(environ, lambda status, headers, exc_info=None: started.append(status))
    try:
        answer = b"".join(result)
    finally:
        result.close()
    return started[0], answer


def instructions(env: dict, secret: str, tokens: list[str]) -> int:
    """Instructions the process creating one payment per token executes, start-up included."""
    done = counted_run([*VALGRIND, bench.PYTHON], env, secret, tokens)
    found = COUNT.search(done.stderr)
    if found is None:
        raise SystemExit(f"the counted run printed no count:\n{done.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def cpu_microseconds(env: dict, secret: str, tokens: list[str]) -> int:
    """User and system CPU of the process creating one payment per token, start-up included."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    counted_run([bench.PYTHON], env, secret, tokens)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return round(spent * 1e6)


def counted_run(command: list[str], env: dict, secret: str, tokens: list[str]):
    """`command` (the interpreter, perhaps under valgrind) running `creates` on `tokens`."""
    done = subprocess.run(
        [*command, __file__, "_creates", secret, *tokens],
        cwd=env["PYTHONPATH"],
        # The same dicts' layouts in every run; the request log written by `creates`.
        env={**env, "PYTHONHASHSEED": "0", "REQUEST_LOG_FLUSH_SECONDS": "0"},
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"the counted run failed:\n{done.stderr[-3000:]}")
    return done


def per_create(measure, env: dict, secret: str, tokens: list[str], warm: int) -> float:
    """`measure` of one create: (warm + the rest) minus warm alone, over the rest."""
    measured = len(tokens) - 2 * warm
    alone = measure(env, secret, tokens[:warm])
    both = measure(env, secret, tokens[warm:])
    return (both - alone) / measured


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench.add_service_arguments(parser, "svc_bench_instructions")
    parser.add_argument("--app", action="append", help="a checkout to count (repeat: A, B)")
    parser.add_argument("--creates", type=int, default=100)
    parser.add_argument("--warm", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pool-max", type=int, default=4)
    parser.add_argument("--cpu", action="store_true", help="time the process's CPU, not count")
    args = parser.parse_args()
    args.app = [str(Path(app).resolve()) for app in args.app or [bench.ROOT]]
    args.production_limits = False  # limits lifted, as bench_payments.py measures them
    return args


@dataclass
class Side:
    """A checkout counted: its service's environment (its own database, migrated by its own
    code), its merchant's secret key, and tokens enough for every round."""

    env: dict
    secret: str
    tokens: Iterator[str]


def prepare(args, index: int, app: str) -> Side:
    """The side of `app`: its database (the bench's, suffixed with `index`), migrated, with a
    merchant and its tokens."""
    database_url = f"{args.database_url}_{index}"
    env = bench.service_env(argparse.Namespace(**{**vars(args), "app": app}))
    env["DATABASE_URL"] = database_url
    bench.recreate_database(database_url)
    bench.manage(env, "migrate", "--noinput")
    account = json.loads(
        bench.manage(env, "create_merchant", "--name", "Bench", "--email", "b@x.test", "--json")
    )
    count = (2 * args.warm + args.creates) * args.rounds
    tokens = bench.create_tokens(env, account["id"], count)
    return Side(env, account["keys"]["test"]["secret"], iter(tokens))


def main():
    args = arguments()
    if not args.cpu and shutil.which("valgrind") is None:
        print("bench_instructions: skipped, valgrind is not installed (apt-get install valgrind)")
        return
    sides = {app: prepare(args, index, app) for index, app in enumerate(args.app)}
    # A create's figure shown in ms (from microseconds) or in millions of instructions.
    measure, unit = (
        (cpu_microseconds, "ms of CPU") if args.cpu else (instructions, "M instructions")
    )
    scale = 1e3 if args.cpu else 1e6
    counts = {app: [] for app in args.app}
    for round_ in range(1, args.rounds + 1):
        for app, side in sides.items():
            batch = [next(side.tokens) for _ in range(2 * args.warm + args.creates)]
            counts[app].append(per_create(measure, side.env, side.secret, batch, args.warm))
            print(f"round {round_} {app}: {counts[app][-1] / scale:.3f} {unit} per create",
                  flush=True)  # fmt: skip
    first = statistics.median(counts[args.app[0]])
    if args.cpu and args.creates < 1000:
        print("(under 1,000 creates a side, start-up's spread of tens of ms outweighs them)")
    for app, figures in counts.items():
        median = statistics.median(figures)
        spread = (max(figures) - min(figures)) / median
        print(f"{app}: median {median / scale:.3f} {unit} per create "
              f"(spread {spread:.1%}), {median / first:.3f}x the first")  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:2] == ["_creates"]:
        creates(sys.argv[2], sys.argv[3:])
    else:
        main()
