#!/usr/bin/env bash
# Runs lint, the import contract and the whole pytest suite.
# Under CI=true the suite must run on PostgreSQL and Redis: start them if they are down and
# fail loudly if they cannot be reached. Outside CI they are used when reachable; otherwise the
# suite runs on the embedded defaults (SQLite + filesystem broker) and says so.
# TEST_ON=embedded runs it on the embedded defaults whatever is reachable. Under CI=true the
# suite then runs a second time, on the embedded defaults, and, in between, the benchmark's
# smoke (bench/run.sh --smoke), then the smoke test and the tests that start no process on
# Python 3.12 and 3.13 (the suite's own venv is 3.11).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python

PG_URL_DEFAULT="postgres://postgres@127.0.0.1:5432/svc"
REDIS_URL_DEFAULT="redis://127.0.0.1:6379/15"

pg_reachable() {
  $PY - "$1" <<'PYEOF' >/dev/null 2>&1
import sys, environ, psycopg
cfg = environ.Env.db_url_config(sys.argv[1])
psycopg.connect(host=cfg["HOST"] or "127.0.0.1", port=cfg["PORT"] or 5432, user=cfg["USER"] or "postgres",
                dbname="postgres", connect_timeout=2).close()
PYEOF
}
redis_reachable() {
  $PY -c "import sys, redis; redis.Redis.from_url(sys.argv[1], socket_connect_timeout=2).ping()" "$1" >/dev/null 2>&1
}
start_postgres() {
  command -v pg_ctlcluster >/dev/null || return 0
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
}
start_redis() {
  command -v redis-server >/dev/null || return 0
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || true
}
wait_for() {  # wait_for CHECK URL: up to 30 s
  for _ in $(seq 1 30); do "$1" "$2" && return 0; sleep 1; done
  return 1
}

find_python() {  # find_python 3.12: an interpreter of that version (PATH, then pyenv's versions)
  local candidate
  for candidate in "python$1" "$(pyenv root 2>/dev/null)"/versions/"$1".*/bin/"python$1"; do
    "$candidate" -c 'import sys' >/dev/null 2>&1 && { command -v "$candidate"; return 0; }
  done
  return 1
}
on_other_pythons() {  # the smoke test and the unit and API tests on every other supported Python
  local version interpreter venv
  for version in 3.12 3.13; do
    interpreter=$(find_python "$version") \
      || { echo "FATAL: Python $version is not installed; CI proves every supported version" >&2; exit 1; }
    venv="var/venv-$version"
    [ -x "$venv/bin/python" ] || "$interpreter" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -e ".[test]"
    echo "NOTE: CI: Python $version: the smoke test, then the tests that start no process."
    "$venv/bin/pytest" -p no:cacheprovider -q -m smoke "$@"
    "$venv/bin/pytest" -p no:cacheprovider -q -m "not e2e" --ignore=tests/browser "$@"
  done
}

# Debian's PACKAGE, waiting up to 10 minutes for another apt or dpkg run to release its lock
# (another checkout's suite, unattended upgrades) rather than failing at once (issue 38).
debian_install() {
  local wait=(-o DPkg::Lock::Timeout=600)
  { apt-get "${wait[@]}" update -qq \
      && DEBIAN_FRONTEND=noninteractive apt-get "${wait[@]}" install -y -qq "$1"; } >&2 || true
}

ensure_chromium() {  # tests/browser drive Debian's Chromium (Playwright downloads no browser)
  [ -n "${CHROMIUM:-}" ] || command -v chromium >/dev/null && return 0
  echo "Chromium is absent: installing Debian's chromium for the browser tests."
  debian_install chromium
  command -v chromium >/dev/null \
    || { echo "FATAL: Chromium is not installed and apt-get could not install it" >&2; exit 1; }
}

ensure_under_ci() {  # ensure_under_ci PACKAGE WHAT: Debian's PACKAGE (a server WHAT starts)
  local package=$1 what=$2
  command -v "$package" >/dev/null || [ -x "/usr/sbin/$package" ] && return 0
  [ "${CI:-}" = "true" ] || { echo "NOTE: $package is absent: $what is skipped."; return 0; }
  echo "$package is absent: installing Debian's $package for $what."
  debian_install "$package"
  command -v "$package" >/dev/null || [ -x "/usr/sbin/$package" ] \
    || { echo "FATAL: $package is not installed and apt-get could not install it" >&2; exit 1; }
}

DB_URL="${DATABASE_URL:-$PG_URL_DEFAULT}"
BROKER_URL="${REDIS_URL:-$REDIS_URL_DEFAULT}"

if [ "${TEST_ON:-}" = "embedded" ]; then
  unset DATABASE_URL REDIS_URL
  echo "NOTE: TEST_ON=embedded: running on the embedded defaults (SQLite + filesystem broker)."
elif [ "${CI:-}" = "true" ]; then
  pg_reachable "$DB_URL" || { start_postgres; wait_for pg_reachable "$DB_URL"; } \
    || { echo "FATAL: PostgreSQL is not reachable at $DB_URL and could not be started" >&2; exit 1; }
  redis_reachable "$BROKER_URL" || { start_redis; wait_for redis_reachable "$BROKER_URL"; } \
    || { echo "FATAL: Redis is not reachable at $BROKER_URL and could not be started" >&2; exit 1; }
  export DATABASE_URL="$DB_URL" REDIS_URL="$BROKER_URL"
elif pg_reachable "$DB_URL" && redis_reachable "$BROKER_URL"; then
  export DATABASE_URL="$DB_URL" REDIS_URL="$BROKER_URL"
else
  unset DATABASE_URL REDIS_URL
  echo "NOTE: PostgreSQL or Redis is not reachable: running on the embedded defaults" \
       "(SQLite + filesystem broker); tests that need PostgreSQL row locks are skipped."
fi
echo "test database: ${DATABASE_URL:-embedded SQLite}; broker: ${REDIS_URL:-embedded filesystem}"

ensure_chromium
ensure_under_ci haproxy "the multi-node test (tests/e2e/test_fleet.py)"
ensure_under_ci prometheus "the metrics test (tests/e2e/test_prometheus.py)"
ensure_under_ci valgrind "the instruction count's smoke (bench/bench_instructions.py)"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/lint-imports
if [ "${CI:-}" = "true" ] && [ "${TEST_ON:-}" != "embedded" ]; then
  # CI also runs the suite on the embedded defaults, which `make run` uses: their code paths
  # (SQLite, the filesystem broker) are tested too. -rs lists every skip with its reason.
  .venv/bin/pytest -p no:cacheprovider "$@"
  echo "NOTE: CI: the benchmarks' smoke (bench/run.sh --smoke: they run, every create succeeds)."
  bash bench/run.sh --smoke
  on_other_pythons "$@"
  echo "NOTE: CI: the suite again, on the embedded defaults (SQLite + filesystem broker)."
  exec env -u DATABASE_URL -u REDIS_URL .venv/bin/pytest -p no:cacheprovider -rs "$@"
fi
exec .venv/bin/pytest -p no:cacheprovider "$@"
