# Two commands on a fresh machine with Python 3.11+: `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: serve test install install-dev browser lint typecheck unit clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The stamp files re-run the install whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

serve: install
	$(BIN)/voxflow serve --host $(HOST) --port $(PORT)

lint: install-dev
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: install-dev
	$(BIN)/mypy

# The demo page's end-to-end test drives Debian's Chromium (no browser download).
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
		echo "installing Debian's chromium for the browser test"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

unit: install-dev browser
	$(BIN)/pytest -q

test: lint typecheck unit

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
