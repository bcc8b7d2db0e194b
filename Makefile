# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run demo test lint bench screenshots clean js

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(VENV)/.bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	touch $(VENV)/.bench

# The servers the HTTP benchmarks run beside Holdpoint's, LangGraph's own and Aegra, each
# in an environment of its own: .venv-NAME from bench/NAME-server.txt (which says why).
LANGGRAPH_VENV := .venv-langgraph
AEGRA_VENV := .venv-aegra
.venv-%/.installed: bench/%-server.txt
	$(PYTHON) -m venv .venv-$*
	.venv-$*/bin/pip install --quiet --upgrade pip
	.venv-$*/bin/pip install --quiet -r $<
	touch $@

# LangGraph's JS SDK for the tests that drive Holdpoint from Node and a browser page
# (tests/api/js), axe-core, and the OpenID Connect provider of the UI's sign-in tests,
# from npm, when npm is here; without it those tests skip (fail in CI).
JS_STAMP := tests/js/node_modules/.installed
$(JS_STAMP): tests/js/package-lock.json
	npm ci --prefix tests/js --no-audit --no-fund --loglevel=error
	touch $@

js:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory $(JS_STAMP); \
	else echo "npm not found: the JS SDK tests (tests/api/js) will skip"; fi

run: $(STAMP)  ## the HTTP API on the embedded SQLite store, projections in-process
	$(BIN)/holdpoint serve

demo: $(STAMP)  ## the refund story in one process, with its events and hash chain
	$(BIN)/holdpoint demo

# Tests wait on the disk, servers and browsers more than on the CPU: 4 workers on
# 2 cores take the suite from 9.8 to 4.9 minutes (each test has its own store and port).
TEST_WORKERS ?= 4

test: $(STAMP) js  ## the whole suite, after the linters
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(VENV)/.bench $(LANGGRAPH_VENV)/.installed $(AEGRA_VENV)/.installed  ## Holdpoint, LangGraph and Aegra side by side; writes BENCHMARKS.md
	$(BIN)/python -m bench.run

screenshots: $(STAMP)  ## the browser UI over a scripted history, as PNGs in docs/screenshots/
	PYTHONPATH=. $(BIN)/python -m tests.api.ui.screenshots

clean:
	rm -rf $(VENV) $(LANGGRAPH_VENV) $(AEGRA_VENV) var .pytest_cache .ruff_cache .hypothesis tests/js/node_modules
