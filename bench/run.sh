#!/usr/bin/env bash
# `make bench`: runs every bench/bench_*.py in turn; each starts what it needs and prints figures.
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s nullglob
scripts=(bench/bench_*.py)
[ ${#scripts[@]} -gt 0 ] || { echo "no benchmarks yet"; exit 0; }
for script in "${scripts[@]}"; do
  echo "== $script"
  extra=()  # the payment bench also measures a live create (localstripe as Stripe)
  [ "$script" = bench/bench_payments.py ] && extra=(--live)
  .venv/bin/python "$script" "${extra[@]}" "$@"
done
