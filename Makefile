# Stepwise: `make run` serves the app, `make test` runs every check, `make bench` writes BENCHMARKS.md.
# Each target creates the virtual environment it needs; nothing has to be installed by hand.
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= $(or $(STREAMLIT_SERVER_PORT),8501)

.PHONY: run test lint format bench browser clean

$(VENV)/.runtime: requirements.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt $(VENV)/.runtime
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	touch $@

# The engine's compiled step loop: built once (about 30 s), then loaded from its cache in 0.3 s.
run: $(VENV)/.runtime
	@$(PY) -m sim.engine.warm
	@echo "Stepwise is starting at http://127.0.0.1:$(PORT)  (Ctrl+C stops it)"
	$(PY) -m streamlit run app.py --server.headless=true --server.address=127.0.0.1 \
		--server.port=$(PORT) --browser.gatherUsageStats=false

browser:
	@bash scripts/ensure_browser.sh

lint: $(VENV)/.dev
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: $(VENV)/.dev
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

# Two workers (pytest-xdist), each test file kept on one worker (module fixtures, one browser
# server per worker): the suite's wall time, not its CPU time, is what CI's 20 minutes bound.
test: $(VENV)/.dev browser lint
	@bash scripts/ensure_postgres.sh
	@$(PY) -m sim.engine.warm
	$(PY) -m pytest -n 2 --dist loadfile --durations=15

bench: $(VENV)/.dev
	@$(PY) -m sim.engine.warm
	$(PY) -m bench $(ONLY)

clean:
	rm -rf $(VENV) test-output .pytest_cache .ruff_cache .hypothesis
