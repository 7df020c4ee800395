#!/usr/bin/env bash
# `make bench`: runs every bench/bench_*.py in turn; each starts what it needs and prints figures.
# `bench/run.sh --smoke`: the short run CI makes so that the benchmark cannot rot.
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s nullglob
if [ "${1:-}" = "--smoke" ]; then
  # CI's smoke (scripts/test.sh): the payment bench, test and live, for a second at one client,
  # and the instruction count and CPU time of a few creates in one process; each must run and
  # every create must succeed, whatever its figures.
  .venv/bin/python bench/bench_payments.py --concurrency 1 --seconds 1 --warmup 0.5 \
    --settle 0.5 --tokens 100 --live --live-tokens 60 --profile 20 --require-success
  .venv/bin/python bench/bench_instructions.py --cpu --warm 2 --creates 3 --rounds 1
  exec .venv/bin/python bench/bench_instructions.py --warm 2 --creates 3 --rounds 1
fi
scripts=(bench/bench_*.py)
[ ${#scripts[@]} -gt 0 ] || { echo "no benchmarks yet"; exit 0; }
for script in "${scripts[@]}"; do
  echo "== $script"
  extra=()  # the payment bench also measures a live create (localstripe as Stripe)
  [ "$script" = bench/bench_payments.py ] && extra=(--live)
  .venv/bin/python "$script" "${extra[@]}" "$@"
done
