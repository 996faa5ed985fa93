# Every target works on a fresh machine: it creates .venv and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# What targets do outside .venv, each skipped with `skip` (README, "What `make test`
# installs"): `make test` starts the local PostgreSQL and Redis when they are installed
# but stopped, and installs Debian's chromium and libfaketime with apt.
SERVICES ?= start
BROWSER ?= install
LIBFAKETIME ?= install

.PHONY: install up cluster test faults lint bench clean services browser faketime

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	touch $(STAMP)

install: $(STAMP)

up: $(STAMP)
	$(BIN)/tickwheel up

# Distributed mode on this machine: 3 schedulers, 2 workers and an API on :8700,
# over the local PostgreSQL and Redis (TICKWHEEL_DATABASE_URL, TICKWHEEL_REDIS_URL).
cluster: $(STAMP) services
	$(BIN)/tickwheel local-cluster

services:
	@[ "$(SERVICES)" = skip ] || scripts/services.sh

browser:
	@[ "$(BROWSER)" = skip ] || scripts/browser.sh

# Debian's libfaketime, for the fault scenarios that move one node's clock.
faketime:
	@[ "$(LIBFAKETIME)" = skip ] || scripts/faketime.sh

test: $(STAMP) services browser faketime
	$(BIN)/pytest -q

# Every fault scenario (tests/faults), then their table: several minutes.
faults: $(STAMP) services faketime
	$(BIN)/pytest -q tests/faults -m ''

lint: $(STAMP)
	$(BIN)/ruff check tickwheel tests bench
	$(BIN)/ruff format --check tickwheel tests bench
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/tickwheel bench compare

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .mypy_cache .ruff_cache
