# Developer entry points. `make run` serves the API with a worker and beat, on PostgreSQL 18
# and Valkey embedded from the virtualenv's wheels (data under .run/); `make test` runs the
# suite against PostgreSQL and Redis on 127.0.0.1, or the same embedded servers where they
# do not answer, with Debian's chromium for the staff console's browser tests and Debian's
# pgbouncer for the tests through PgBouncer (installed if needed).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# The suite's services. Each defaults to the standard local one; set any of them to use
# your own database or Redis databases (e.g. when several suites run side by side).
TEST_DATABASE_URL := $(or $(DATABASE_URL),postgres://postgres:postgres@127.0.0.1:5432/sendrealm)
TEST_CACHE_URL := $(or $(CACHE_URL),redis://127.0.0.1:6379/0)
TEST_BROKER_URL := $(or $(CELERY_BROKER_URL),redis://127.0.0.1:6379/1)
# PYTHONDONTWRITEBYTECODE emptied: every process the suite starts (its workers, granian,
# Celery) would otherwise compile each module it imports, and pytest rewrite each test
# module, on every run.
TEST_ENV := DJANGO_SETTINGS_MODULE=config.settings.test DATABASE_URL='$(TEST_DATABASE_URL)' \
	CACHE_URL='$(TEST_CACHE_URL)' CELERY_BROKER_URL='$(TEST_BROKER_URL)' PYTHONDONTWRITEBYTECODE=
# Where the browser tests leave screenshots of their failures (printed when a run fails)
# and of the preference page at phone width.
SCREENSHOT_DIR ?= $(CURDIR)/.artifacts/screenshots
# A hard bound so a hung test cannot hold CI forever; the end-to-end suite has its own.
TEST_TIMEOUT ?= 900
E2E_TIMEOUT ?= 420
# A fresh clone in CI builds the test database from scratch instead of reusing one.
PYTEST_ARGS ?= $(if $(CI),--create-db,)
# The main run's pytest-xdist workers, each with its own test database and Redis databases
# (config/settings/test.py); 0 runs it in one process.
TEST_WORKERS ?= 2

# Benchmarks: `make bench` runs every bench/bench_*.py, `make bench ONLY=project` one.
ONLY ?=
BENCH_ARGS ?=
# The soak: `make soak` stores 10 million events through the API in steps of a million,
# `make soak EVENTS=60000 SOAK_ARGS="--step 20000"` a small one (python -m bench.soak --help).
EVENTS ?=
SOAK_ARGS ?=

.PHONY: help install run test lint typecheck check bench soak worker services

help:
	@echo "make install    create .venv and install requirements/dev.txt"
	@echo "make run        migrate, then serve http://127.0.0.1:8000 with a Celery worker and beat"
	@echo "make test       run the test suite (PostgreSQL and Redis on 127.0.0.1, else embedded)"
	@echo "make lint       ruff check, ruff format --check and the import contracts"
	@echo "make typecheck  mypy"
	@echo "make check      manage.py check and makemigrations --check"
	@echo "make bench      benchmarks against a production server (ONLY=<name> for one)"
	@echo "make soak       10 million events through the API: ingest, processing and sweeps stay flat"
	@echo "make worker     a Celery worker alone"

install: $(STAMP)

# Re-runs only when a requirements file changed since the last successful install.
$(STAMP): requirements/base.txt requirements/dev.txt scripts/install.sh
	@PYTHON=$(PYTHON) VENV=$(VENV) scripts/install.sh
	@touch $@

run: install
	@exec $(BIN)/python scripts/run.py

worker: install
	@DJANGO_SETTINGS_MODULE=$${DJANGO_SETTINGS_MODULE:-config.settings.local} \
		exec $(BIN)/celery -A config worker -l info --concurrency $${CELERY_CONCURRENCY:-2}

services:
	@$(TEST_ENV) scripts/ensure-services.sh

# $(1): the environment, $(2): what to test; against the services that answer or the
# embedded ones in their place (scripts/ensure-services.sh), bounded by $(3) seconds, else
# TEST_TIMEOUT. A failed run names the screenshots its browser tests left.
bounded_pytest = status=0; $(1) SCREENSHOT_DIR='$(SCREENSHOT_DIR)' scripts/ensure-services.sh \
	timeout -k 10 $(or $(3),$(TEST_TIMEOUT)) $(BIN)/pytest $(PYTEST_ARGS) $(2) || status=$$?; \
	if [ $$status -eq 124 ]; then echo "The test run ran past $(or $(3),$(TEST_TIMEOUT))s."; fi; \
	if [ $$status -ne 0 ] && [ -n "$$(ls -A '$(SCREENSHOT_DIR)' 2>/dev/null)" ]; then \
		echo "Screenshots of the failed browser tests: $(SCREENSHOT_DIR)"; fi; \
	exit $$status

test: install
	@rm -rf '$(SCREENSHOT_DIR)'
	@$(call bounded_pytest,$(TEST_ENV) ENSURE_BROWSER=1 ENSURE_PGBOUNCER=1 ENSURE_NODE_CLIENT=1,-n $(TEST_WORKERS) tests/ --ignore=tests/e2e)
	@echo "Running the end-to-end suite (tests/e2e: make run's stack and the production topology)"
	@$(call bounded_pytest,$(TEST_ENV) ENSURE_PGBOUNCER=1,tests/e2e,$(E2E_TIMEOUT))

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

typecheck: install
	$(BIN)/mypy .

# The test settings: their connections default to 127.0.0.1, and neither command needs a
# server to answer.
check: install
	$(TEST_ENV) $(BIN)/python manage.py check
	$(TEST_ENV) $(BIN)/python manage.py makemigrations --check --dry-run

bench: install
	@$(TEST_ENV) scripts/ensure-services.sh \
		$(BIN)/python -m bench $(if $(ONLY),--only $(ONLY),) $(BENCH_ARGS)

# Ten steps of a million events by default; the same server and services as `make bench`.
soak: install
	@$(TEST_ENV) scripts/ensure-services.sh \
		$(BIN)/python -m bench.soak $(if $(EVENTS),--events $(EVENTS),) $(SOAK_ARGS)
