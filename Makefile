# Two commands for a newcomer: `make demo` and `make test` (both set up .venv first).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install demo test lint bench clean

$(STAMP): pyproject.toml constraints/py311.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -U pip uv
	$(VENV)/bin/uv pip install --python $(PY) --compile-bytecode -q \
		-c constraints/py311.txt -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

# ruff, then the import contracts of pyproject.toml's [tool.importlinter] (the layers)
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache

test: lint
	$(PY) -m pytest

demo: $(STAMP)
	VENV=$(VENV) bash scripts/demo.sh

bench: $(STAMP)
	$(PY) benchmarks/bench_astrid.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
