"""A/B in one sitting: bench/bench_payments.py run alternately on two sides, then each figure's
median and spread per side.

A side is a checkout (`--app`, as bench_payments takes it) and environment overrides for its
service (`--env-a`, `--env-b`). Runs go A, B, A, B, ... `--pairs` times; every run is this
checkout's bench_payments.py (its load generator, floor and meters), only the service differs.
On a shared machine the figure to compare is the app's CPU ms per create, which other load
barely moves; payments/s, p50 and p99 move with the load, and the ratio to the floor (measured
in the same run) less so. The load average is printed beside them. Per figure: each side's
median (min-max), B's median over A's, and B over A within each pair; then each side's app CPU
per create moved to equal load from the other processes on the machine (one slope fitted on
both sides: the app's CPU per create rises with their load; rough with few pairs).

    .venv/bin/python bench/ab.py --app ../before --app . --pairs 5       # two commits
    .venv/bin/python bench/ab.py --pairs 5 --env-b REQUEST_LOG_ENABLED=false   # one setting
    .venv/bin/python bench/ab.py --pairs 5 -- --concurrency 8 32 --subscribed  # its options

After `--`, options for bench_payments.py (default `--concurrency 8 --seconds 8 --profile 0`;
a later option wins). Overrides reach the service because bench_payments starts it from its own
environment (settings it sets itself, such as the lifted test-mode budgets, win). `--out FILE`
keeps every run's figures (JSON); `--report FILE` prints their report again.
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")
BENCH = str(ROOT / "bench" / "bench_payments.py")
BENCH_DEFAULTS = ["--concurrency", "8", "--seconds", "8", "--profile", "0"]

# (label, how to read it from one concurrency level of bench_payments' --json)
FIGURES = (
    ("app CPU ms/create", lambda level: level["cpu_ms"]["app"]),
    ("PostgreSQL CPU ms/create", lambda level: level["cpu_ms"]["postgres"]),
    ("payments/s", lambda level: level["stack"]["per_s"]),
    ("p50 ms", lambda level: level["stack"]["p50_ms"]),
    ("p99 ms", lambda level: level["stack"]["p99_ms"]),
    ("ratio to the floor", lambda level: level["ratio"]),
    ("floor payments/s", lambda level: level["floor"]["per_s"]),
    ("machine CPU ms/create", lambda level: level["cpu_ms"]["machine"]),  # everyone's: load
    ("load average (1 min)", lambda level: level["load"][0]),
)


def overrides(pairs: list[str]) -> dict:
    """["NAME=value", ...] -> {NAME: value}."""
    try:
        return dict(pair.split("=", 1) for pair in pairs)
    except ValueError:
        raise SystemExit(f"--env-a/--env-b take NAME=value, not {pairs}") from None


def commit_of(app: str) -> str:
    """The checkout's commit, marked when it has uncommitted changes."""

    def git(*argv):
        return subprocess.run(["git", "-C", app, *argv], capture_output=True, text=True).stdout

    return git("rev-parse", "--short", "HEAD").strip() + ("+dirty" if git("status", "-s") else "")


def run_once(side: dict, bench_args: list[str]) -> list[dict]:
    """One bench_payments.py run of one side -> its concurrency levels' figures."""
    with tempfile.TemporaryDirectory() as scratch:
        figures = Path(scratch) / "figures.json"
        subprocess.run(
            [PYTHON, BENCH, "--app", side["app"], "--json", str(figures), *bench_args],
            env={**os.environ, **side["env"]},
            check=True,
        )
        return json.loads(figures.read_text())["levels"]


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def level_of(run: dict, concurrency: int) -> dict:
    return next(level for level in run["levels"] if level["concurrency"] == concurrency)


def others_busy_cores(level: dict) -> float:
    """Cores kept busy meanwhile by everything but the service, its database backends and the
    load generator: the machine's CPU per create less theirs, times creates per second."""
    cpu = level["cpu_ms"]
    ours = cpu["app"] + cpu["postgres"] + cpu["load_generator"]
    return (cpu["machine"] - ours) * level["stack"]["per_s"] / 1000


def at_equal_load(levels: list[tuple[dict, dict]]) -> str:
    """Each side's mean app CPU per create moved to the same load from the others along one
    slope fitted on both sides (app CPU per create rises with the others' load: shared cores
    and caches). Rough with few pairs; the within-pair ratios are the plainer figure."""
    sides = {"A": [a for a, _ in levels], "B": [b for _, b in levels]}
    points = {
        name: [(others_busy_cores(level), level["cpu_ms"]["app"]) for level in side]
        for name, side in sides.items()
    }
    means = {
        name: (statistics.mean(x for x, _ in side), statistics.mean(y for _, y in side))
        for name, side in points.items()
    }
    spread_x = sum((x - means[n][0]) ** 2 for n, side in points.items() for x, _ in side)
    if not spread_x:
        return "-"
    slope = (
        sum((x - means[n][0]) * (y - means[n][1]) for n, side in points.items() for x, y in side)
        / spread_x
    )
    load = statistics.mean(x for side in points.values() for x, _ in side)
    a, b = (means[n][1] + slope * (load - means[n][0]) for n in ("A", "B"))
    return f"A {a:.2f}, B {b:.2f}, B/A {b / a:.2f} ({slope:.2f} ms per busy core, at {load:.2f})"


def report(sides: dict, runs: list[dict]) -> None:
    """Per concurrency level and figure: each side's median (min-max), B's median over A's,
    and the median (min-max) of B over A within each pair (a pair's two runs, minutes apart,
    met about the same load)."""
    for name, side in sides.items():
        print(f"{name}: {side['app']} at {side['commit']} {side['env'] or ''}")
    pairs = list(zip(runs[0::2], runs[1::2], strict=True))
    for concurrency in sorted({level["concurrency"] for level in runs[0]["levels"]}):
        levels = [(level_of(a, concurrency), level_of(b, concurrency)) for a, b in pairs]
        print(f"\n{concurrency} clients, {len(pairs)} pairs: median (min-max)")
        print(f"{'':>26} | {'A':>22} | {'B':>22} | B/A | B/A in each pair")
        for label, read in FIGURES:
            a, b = [read(level) for level, _ in levels], [read(level) for _, level in levels]
            within = [y / x for x, y in zip(a, b, strict=True) if x]
            overall = statistics.median(b) / statistics.median(a) if statistics.median(a) else 0
            print(f"{label:>26} | {spread(a):>22} | {spread(b):>22} | {overall:.2f} | "
                  f"{spread(within) if within else '-'}")  # fmt: skip
        print(f"app CPU ms/create at equal load from other processes: {at_equal_load(levels)}")


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--app",
        action="append",
        default=[],
        help="A's checkout, then B's (each defaults to this one)",
    )
    parser.add_argument("--env-a", action="append", default=[], metavar="NAME=value")
    parser.add_argument("--env-b", action="append", default=[], metavar="NAME=value")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--out", metavar="FILE", help="every run's figures, as JSON")
    parser.add_argument("--report", metavar="FILE", help="print the report of an --out file")
    parser.add_argument("bench_args", nargs="*", help="after --: options for bench_payments.py")
    args = parser.parse_args()
    if args.report:
        saved = json.loads(Path(args.report).read_text())
        return report(saved["sides"], saved["runs"])
    if len(args.app) > 2:
        parser.error("at most two --app")
    apps = [*args.app, str(ROOT), str(ROOT)][:2]
    sides = {
        name: {"app": str(Path(app).resolve()), "env": overrides(env)}
        for name, app, env in (("A", apps[0], args.env_a), ("B", apps[1], args.env_b))
    }
    for side in sides.values():
        side["commit"] = commit_of(side["app"])
    bench_args = [*BENCH_DEFAULTS, *args.bench_args]
    started, runs = datetime.datetime.now(datetime.UTC), []
    for pair in range(args.pairs):
        for name, side in sides.items():
            print(f"== pair {pair + 1}/{args.pairs}, {name}", flush=True)
            runs.append({"side": name, "levels": run_once(side, bench_args)})
    print(f"\nstarted {started:%Y-%m-%d %H:%M} UTC, {len(runs)} runs of bench_payments.py "
          f"{' '.join(bench_args)}")  # fmt: skip
    report(sides, runs)
    if args.out:
        Path(args.out).write_text(
            json.dumps({"started": started.isoformat(), "sides": sides, "runs": runs}, indent=1)
        )


if __name__ == "__main__":
    sys.exit(main())
