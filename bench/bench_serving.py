"""What serving adds to a request: the web server's CPU per `GET /healthz` at one client,
against the same request called in one process (docs/payments.md "Current figure").

`/healthz` is answered by the first middleware (config/probes.py): almost nothing of the app
runs, so the served figure is mostly granian's (parsing, its threads' hand-off, the answer
written back) and the kernel's for the client's socket, and the in-process one what is left
of Django's. Every request pays the difference, a create as much as a probe; bench_payments.py
sees it in each create's app CPU, bench_instructions.py does not.

    .venv/bin/python bench/bench_serving.py                 # 5,000 requests, 3 rounds each
    .venv/bin/python bench/bench_serving.py --requests 500  # quicker, rougher
"""

import argparse
import os
import resource
import statistics
import sys
from http.client import HTTPConnection

import bench_payments as bench
from bench_instructions import called

PATH = "/healthz"


def served_cpu(port: int, server_pid: int, requests: int) -> float:
    """The server's CPU seconds for `requests` GETs over one keep-alive connection (its
    processes' CPU read before and after, once the last answer is read)."""
    connection = HTTPConnection("127.0.0.1", port)
    ask(connection, 200)  # each worker thread's first requests left out
    before = bench.tree_cpu_seconds(server_pid)
    ask(connection, requests)
    return bench.tree_cpu_seconds(server_pid) - before


def ask(connection: HTTPConnection, requests: int) -> None:
    for _ in range(requests):
        connection.request("GET", PATH)
        answer = connection.getresponse()
        answer.read()
        if answer.status != 200:
            raise SystemExit(f"{PATH} answered {answer.status}")


def in_process_cpu(application, requests: int) -> float:
    """This process's CPU seconds for `requests` calls of the WSGI application, as a server
    calls it (bench_instructions.called)."""
    for _ in range(200):
        call(application)
    before = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(requests):
        call(application)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def call(application) -> None:
    status, _ = called(application, "GET", PATH)
    if not status.startswith("200"):
        raise SystemExit(f"{PATH} answered {status} in-process")


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench.add_service_arguments(parser, "svc_bench_serving")
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)  # as the Procfile
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--port", type=int, default=8766)
    args = parser.parse_args()
    args.app, args.pool_max, args.production_limits = str(bench.ROOT), 4, False
    return args


def main():
    args = arguments()
    env = bench.service_env(args)
    bench.recreate_database(env["DATABASE_URL"])
    bench.manage(env, "migrate", "--noinput")
    server = bench.start_server(env, args)
    try:
        served = [served_cpu(args.port, server.pid, args.requests) for _ in range(args.rounds)]
    finally:
        server.terminate()
        server.wait()
    os.environ.update(env)
    sys.path.insert(0, env["PYTHONPATH"])
    from config.wsgi import application

    alone = [in_process_cpu(application, args.requests) for _ in range(args.rounds)]
    served_ms = statistics.median(served) / args.requests * 1e3
    alone_ms = statistics.median(alone) / args.requests * 1e3
    print(f"GET {PATH}, {args.requests} requests x {args.rounds} rounds, one client, granian "
          f"{args.workers} workers x {args.threads} threads:")  # fmt: skip
    print(f"  served     {served_ms:.3f} ms of the server's CPU a request (median)")
    print(f"  in-process {alone_ms:.3f} ms of CPU a request (median)")
    print(f"  serving adds {served_ms - alone_ms:.3f} ms a request")


if __name__ == "__main__":
    main()
