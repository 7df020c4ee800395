# The two commands a newcomer needs: `make run` and `make test` (README.md).
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
# The back office's own process (Procfile `admin`, docs/back-office.md "Its own process").
ADMIN_PORT ?= $(shell expr $(PORT) + 1)

.PHONY: run test install install-test migrate bench lint faults openapi fuzz python-client

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Reinstall only when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(VENV)/.installed $(VENV)/.installed-client $@

$(VENV)/.installed-client: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e ".[client]"
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# Development settings (DEBUG on, random dev-only secrets), written only when absent; settings
# read it under the real environment, so manage.py needs nothing more (docs/operations.md).
# Webhooks may go to a receiver on loopback (https still required) whose certificate is signed
# by the development CA below: scripts/webhook_receiver.py, README "Five minutes to a refund".
RECEIVER_CA := $(CURDIR)/var/webhook-receiver/ca.pem
.env:
	$(PYTHON) -c 'import secrets; t = secrets.token_urlsafe; print(f"DEBUG=true\nDJANGO_SECRET_KEY=dev-{t(40)}\nAPI_KEY_PEPPER=dev-{t(40)}")' > $@.tmp
	printf 'WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8,::1/128\nWEBHOOK_CA_BUNDLE=%s\n' '$(RECEIVER_CA)' >> $@.tmp
	mv $@.tmp $@

$(RECEIVER_CA): | $(VENV)/.installed
	$(PY) scripts/webhook_receiver.py --certificate

migrate: install .env
	mkdir -p var
	$(PY) manage.py migrate --noinput

# Web server (granian, WSGI: the API on PORT, the admin on ADMIN_PORT, two processes), both
# Celery workers and beat in the foreground, each restarted by
# scripts/supervise.py when it dies; Ctrl-C stops them all. honcho reads no .env of its own
# (--env /dev/null): settings read it, under the real environment. honcho hands each process a
# PORT of its own (5000, 5100, ...), so the origin in links is set here, for all of them.
WEB_HOST ?= 127.0.0.1
define start-every-process
	$(PY) manage.py clear_metrics --verbosity 0
	VENV=$(VENV) WEB_HOST=$(WEB_HOST) WEB_PORT=$(PORT) ADMIN_PORT=$(ADMIN_PORT) \
		PUBLIC_BASE_URL=$${PUBLIC_BASE_URL:-http://$(WEB_HOST):$(PORT)} \
		$(VENV)/bin/honcho start -f Procfile --env /dev/null
endef

# A laptop: install, migrate, then every process. A development shape: one web pool and no
# proxy, so none of the proxy's protections (docs/admission.md "Every shape").
run: migrate $(RECEIVER_CA)
	$(PY) manage.py collectstatic --noinput --verbosity 0
	@echo "make run: a DEVELOPMENT shape (one web pool, no proxy): without the proxy's refusals and test-mode pool. Production: make serve behind deploy/haproxy.cfg, or compose.yaml (docs/admission.md)."
	$(start-every-process)

# One node from an installed release (scripts/install.sh): every process, installing nothing
# and migrating nothing (the release step, `manage.py migrate`, runs once per release;
# docs/production.md "Processes"). Where web listens: WEB_HOST and PORT, e.g.
# `make serve VENV=/opt/venv WEB_HOST=0.0.0.0 PORT=8000 PUBLIC_BASE_URL=https://pay.example.com`.
# Then the proxy step, which carries the protections: a test-mode pool (`WEB_PORT=8002
# scripts/serve.py web-test`) and haproxy with deploy/haproxy.cfg, NODE1=this node's
# web, NODE1_TEST=its test pool (docs/production.md "The proxy", docs/admission.md).
.PHONY: serve
serve:
	$(start-every-process)

test: install-test
	bash scripts/test.sh

lint: install-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

# Regenerate the committed OpenAPI description from the code (docs/openapi.md); fails on warnings.
openapi: install
	DEBUG=true $(PY) manage.py spectacular --validate --fail-on-warn --file docs/openapi.yaml

# A typed Python client generated from the served description of `make run` (on PORT), into
# PYTHON_CLIENT, outside what ruff checks; then mypy --strict on it and on the integration
# that uses it, clients/python/integration.py (docs/openapi.md "Generated clients").
PYTHON_CLIENT ?= var/python-client
python-client: $(VENV)/.installed-client
	mkdir -p $(PYTHON_CLIENT)
	curl -sSf http://127.0.0.1:$(PORT)/openapi.json -o $(PYTHON_CLIENT)/openapi.json
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/openapi-python-client generate \
		--path $(PYTHON_CLIENT)/openapi.json --config clients/python/config.yaml --meta none \
		--output-path $(PYTHON_CLIENT)/svc_client --overwrite
	MYPYPATH=$(PYTHON_CLIENT) $(VENV)/bin/mypy --strict --cache-dir $(PYTHON_CLIENT)/.mypy_cache \
		$(PYTHON_CLIENT)/svc_client clients/python/integration.py

# The schemathesis run of `make test`, longer (docs/openapi.md "Fuzzing"); needs PostgreSQL.
fuzz: install-test
	FUZZ_MAX_EXAMPLES=$${FUZZ_MAX_EXAMPLES:-50} FUZZ_TIMEOUT=$${FUZZ_TIMEOUT:-3600} \
		FUZZ_PHASES=$${FUZZ_PHASES:-examples,coverage,fuzzing,stateful} \
		$(VENV)/bin/pytest tests/e2e/test_fuzz.py -p no:cacheprovider

bench: install-test
	bash bench/run.sh

# List reads at scale, a small merchant beside a big one, before and after (docs/data.md
# "Reads at scale"); fills a scratch database, BENCH_SCALE_DATABASE_URL. PAYMENTS=10k|100k|1M.
.PHONY: bench-scale
bench-scale: install-test
	$(PY) bench/bench_scale.py --payments $${PAYMENTS:-1M} $(ARGS)

# Fault-injection suite over real processes (docs/faults.md); not part of `make test`.
# `make faults ARGS=--quick` for the ~3-minute run.
faults: install-test
	$(PY) bench/faults.py $(ARGS)
