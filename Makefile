# The two commands a newcomer needs: `make run` and `make test` (README.md).
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000

.PHONY: run test install install-test migrate bench lint faults openapi fuzz

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Reinstall only when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

migrate: install
	mkdir -p var
	DEBUG=$${DEBUG:-true} $(PY) manage.py migrate --noinput

# Web server (granian, WSGI), Celery worker and beat in the foreground; Ctrl-C stops all three.
run: migrate
	DEBUG=$${DEBUG:-true} $(PY) manage.py collectstatic --noinput --verbosity 0
	DEBUG=$${DEBUG:-true} WEB_PORT=$(PORT) $(VENV)/bin/honcho start -f Procfile

test: install-test
	bash scripts/test.sh

lint: install-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

# Regenerate the committed OpenAPI description from the code (docs/openapi.md); fails on warnings.
openapi: install
	DEBUG=true $(PY) manage.py spectacular --validate --fail-on-warn --file docs/openapi.yaml

# The schemathesis run of `make test`, longer (docs/openapi.md "Fuzzing"); needs PostgreSQL.
fuzz: install-test
	FUZZ_MAX_EXAMPLES=$${FUZZ_MAX_EXAMPLES:-50} FUZZ_TIMEOUT=$${FUZZ_TIMEOUT:-3600} \
		FUZZ_PHASES=$${FUZZ_PHASES:-examples,coverage,fuzzing,stateful} \
		$(VENV)/bin/pytest tests/e2e/test_fuzz.py -p no:cacheprovider

bench: install-test
	bash bench/run.sh

# Fault-injection suite over real processes (docs/faults.md); not part of `make test`.
# `make faults ARGS=--quick` for the ~3-minute run.
faults: install-test
	$(PY) bench/faults.py $(ARGS)
