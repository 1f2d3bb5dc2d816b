# `make demo` installs everything and runs the main job; `make test` installs and runs the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build of torch, installed first on machines without CUDA so that no CUDA wheels are pulled.
TORCH_CPU ?= torch==2.13.0

.PHONY: install demo test

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	@if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then \
		echo "CUDA found: installing the default CUDA torch"; $(BIN)/pip install -q torch; \
	else \
		echo "no CUDA: installing $(TORCH_CPU) (CPU build) first"; $(BIN)/pip install -q "$(TORCH_CPU)"; \
	fi
	$(BIN)/pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

demo: install
	RAY_AUTH_MODE=disabled $(BIN)/python tune.py

test: install
	RAY_AUTH_MODE=disabled $(BIN)/python -m pytest
