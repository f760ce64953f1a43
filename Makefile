# Two commands for a newcomer: `make demo` and `make test` (both set up .venv first).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

# The lowest supported Airflow (3.1.x) in a second environment, for the provider's tests
AF31_VENV ?= .venv-af31
AF31_PY := $(AF31_VENV)/bin/python
AF31_STAMP := $(AF31_VENV)/.installed-stamp
# the provider's operator, connection, plugin and DAG tests (no Spark, Dask or oneDAL
# there); the two that re-run the publishing DAG in a subprocess (OpenLineage listener,
# make demo: tests/dags/test_dag_subprocesses.py) stay with the locked stack, to keep this
# run short
AIRFLOW_MIN_TESTS ?= tests/operators/test_provider.py tests/operators/test_connections.py tests/operators/test_plugin.py \
	tests/operators/test_operators.py tests/operators/test_dbapi.py tests/operators/test_store_fs.py \
	tests/engine/test_performance_forest.py tests/dags/test_dags.py

.PHONY: install demo test lint bench clean test-airflow-min constraints-airflow-min

$(STAMP): pyproject.toml constraints/py311.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -U pip uv
	$(VENV)/bin/uv pip install --python $(PY) --compile-bytecode -q \
		-c constraints/py311.txt -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

$(AF31_STAMP): $(STAMP) pyproject.toml constraints/airflow-3.1.txt constraints/airflow-3.1.in
	test -x $(AF31_PY) || $(VENV)/bin/uv venv -q --python $(PYTHON) $(AF31_VENV)
	$(VENV)/bin/uv pip install --python $(AF31_PY) --compile-bytecode -q \
		-c constraints/airflow-3.1.txt -e . -r constraints/airflow-3.1.in
	touch $(AF31_STAMP)

# re-resolve the 3.1 lock (the newest 3.1.x patch and what the tests need)
constraints-airflow-min: $(STAMP)
	$(VENV)/bin/uv pip compile -q pyproject.toml constraints/airflow-3.1.in -p 3.11 \
		-o constraints/airflow-3.1.txt

test-airflow-min: $(AF31_STAMP)
	$(AF31_PY) -c "import airflow; print('provider tests on Airflow', airflow.__version__)"
	$(AF31_PY) -m pytest -p no:cacheprovider $(AIRFLOW_MIN_TESTS)

# ruff, then the import contracts of pyproject.toml's [tool.importlinter] (the layers)
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache

# the 30 slowest tests are listed at the end, to keep the CI run's time in view (only the
# tests marked e2e may take over 60 s); the modules are spread over TEST_WORKERS
# processes (pytest-xdist; each module whole, so its fixtures run once): most tests use
# one core, and CI has two. In collection order, not by test count: conftest.py puts
# the longest modules first. Learned stores the DAG runs only use are built once per
# run (tests/shared_artefacts.py).
# tests/<subpackage>/ mirror the package. tests/engine runs first with Airflow blocked
# (tests/_plugins/without_airflow.py): the library never imports it, so the engine's
# tests pass on a machine without Airflow. The total wall time (lint included) is
# printed last, whatever the outcome.
TEST_WORKERS ?= 2
test: $(STAMP)
	@started=$$(date +%s); status=0; \
	$(MAKE) --no-print-directory lint || status=$$?; \
	if [ $$status -eq 0 ]; then \
		PYTHONPATH=tests/_plugins $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile \
			--no-loadscope-reorder -p without_airflow --durations=10 tests/engine \
			|| status=$$?; \
	fi; \
	if [ $$status -eq 0 ]; then \
		$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder \
			--durations=30 --ignore=tests/engine || status=$$?; \
	fi; \
	echo "make test: $$(( $$(date +%s) - started )) s wall time (exit status $$status)"; \
	exit $$status

demo: $(STAMP)
	VENV=$(VENV) bash scripts/demo.sh

bench: $(STAMP)
	$(PY) benchmarks/bench_astrid.py

clean:
	rm -rf $(VENV) $(AF31_VENV) .pytest_cache .ruff_cache
