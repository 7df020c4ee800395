#!/usr/bin/env bash
# Installs a release where it will run, touching no database (docs/production.md "Installing"):
# a virtualenv holding the service and its runtime dependencies only (no test extras), then the
# static files the web process serves (var/staticfiles). The Dockerfile runs it, and so does the
# smoke test (tests/e2e/stack.py) for the virtualenv `make run` starts from.
# usage: scripts/install.sh [VENV]   (default: $VENV, else .venv; PYTHON picks the interpreter)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:-${VENV:-.venv}}"
PYTHON="${PYTHON:-python3.11}"

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet .
# collectstatic reads the settings, which refuse to load without secrets unless DEBUG is on; it
# only copies files, so a throwaway DEBUG is enough here and no secret enters the image.
DEBUG=true ENV_FILE= "$VENV/bin/python" manage.py collectstatic --noinput --verbosity 0
