# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run demo test lint bench screenshots clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(VENV)/.bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	touch $(VENV)/.bench

# LangGraph's own server, for the HTTP benchmarks, in an environment of its own
# (bench/langgraph-server.txt says why).
LANGGRAPH_VENV := .venv-langgraph
$(LANGGRAPH_VENV)/.installed: bench/langgraph-server.txt
	$(PYTHON) -m venv $(LANGGRAPH_VENV)
	$(LANGGRAPH_VENV)/bin/pip install --quiet --upgrade pip
	$(LANGGRAPH_VENV)/bin/pip install --quiet -r bench/langgraph-server.txt
	touch $@

run: $(STAMP)  ## the HTTP API on the embedded SQLite store, projections in-process
	$(BIN)/holdpoint serve

demo: $(STAMP)  ## the refund story in one process, with its events and hash chain
	$(BIN)/holdpoint demo

# Tests wait on the disk, servers and browsers more than on the CPU: 4 workers on
# 2 cores take the suite from 9.8 to 4.9 minutes (each test has its own store and port).
TEST_WORKERS ?= 4

test: $(STAMP)  ## the whole suite, after the linters
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(VENV)/.bench $(LANGGRAPH_VENV)/.installed  ## Holdpoint and LangGraph side by side; writes BENCHMARKS.md
	$(BIN)/python -m bench.run

screenshots: $(STAMP)  ## the browser UI over a scripted history, as PNGs in docs/screenshots/
	PYTHONPATH=. $(BIN)/python -m tests.api.ui.screenshots

clean:
	rm -rf $(VENV) $(LANGGRAPH_VENV) var .pytest_cache .ruff_cache .hypothesis
