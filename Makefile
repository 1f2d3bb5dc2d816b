# `make demo` installs everything, fetches the data it needs if missing, and runs the main job; `make test` installs,
# fetches the benchmarks the tests read if missing, and runs the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Which torch goes in first: `auto` (the CUDA build where nvidia-smi sees a GPU, else the CPU
# build), `cpu` or `cuda`. The CPU build comes from TORCH_CPU_INDEX when it is set (PyPI serves
# CUDA wheels for Linux: a cluster's CPU head sets https://download.pytorch.org/whl/cpu); this
# machine's pip index serves the CPU build of torch==2.13.0 directly.
TORCH_VERSION ?= 2.13.0
TORCH_BUILD ?= auto
TORCH_CPU_INDEX ?=
# The package's extras, all installed here (psedual/extras.py): `test`, `plm` (the MiniLM encoder), `llm`
# (openai), `track` (MLflow, TensorBoard, optuna-dashboard), `cluster` (boto3, which Ray's AWS launcher
# imports). A plain `pip install .` trains and sweeps without any; a command that needs one names it.
EXTRAS ?= test,plm,llm,track,cluster
# Where a missing benchmark file is downloaded from: empty for GitHub itself (each file pinned by
# commit and SHA256), or a host laid out the same way (an internal mirror: DATA_MIRROR=https://...).
DATA_MIRROR ?=
FETCH = $(BIN)/psedual data fetch --if_missing $(if $(DATA_MIRROR),--mirror $(DATA_MIRROR))

.PHONY: install demo readme test gpu-carry lowest

# constraints.txt pins every package to the versions the tests passed with (the same on every
# cluster node, whenever it installs); pyproject.toml keeps the ranges the code needs.
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	@build=$(TORCH_BUILD); \
	if [ "$$build" = auto ]; then \
		if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then build=cuda; else build=cpu; fi; \
	fi; \
	case "$$build" in \
	cuda) echo "installing torch==$(TORCH_VERSION), CUDA build"; $(BIN)/pip install -q "torch==$(TORCH_VERSION)";; \
	cpu) echo "installing torch==$(TORCH_VERSION), CPU build, first (no CUDA wheels)"; \
		$(BIN)/pip install -q "torch==$(TORCH_VERSION)" $(if $(TORCH_CPU_INDEX),--index-url $(TORCH_CPU_INDEX));; \
	*) echo "TORCH_BUILD must be auto, cpu or cuda, not $$build"; exit 2;; \
	esac
	$(BIN)/pip install -q -e '.[$(EXTRAS)]' -c constraints.txt
	touch $@

install: $(VENV)/.installed

# The main job (search_spaces/default.yaml) trains on MAWPS fold 0: on a machine whose data root
# lacks it, fetch it first (into $PSEDUAL_DATA or ~/.local/share/psedual/data; docs/data.md).
demo: install
	$(FETCH) mawps
	RAY_AUTH_MODE=disabled $(BIN)/python tune.py

# The README's registry tables (variants, datasets) are rendered from the registries: after adding
# an encoder or a dataset, run this (a test fails until the README matches).
readme: install
	$(BIN)/python -m psedual.readme README.md docs/solvers.md docs/analysis.md

# The tests read every benchmark: a data root that holds them all (CI's ../shared/data, $PSEDUAL_DATA)
# is used as it is; otherwise they are fetched, and offline the fetch stops naming what to copy where.
test: install
	$(FETCH)
	RAY_AUTH_MODE=disabled $(BIN)/python -m pytest

# What a GPU session carries to a device machine (docs/gpu.md): .carry/session.tar.xz, the packages
# the device image lacks, the data, the stand-in encoder's tokenizer and, with REFERENCE=DIR (a
# checkout of github.com/ShichaoSun/math_seq2tree), the published GTS for the side-by-side.
REFERENCE ?=
gpu-carry: install
	$(BIN)/python bench/gpu_carry.py $(if $(REFERENCE),--reference $(REFERENCE))

# Are pyproject.toml's lower bounds true? A scratch venv with every direct dependency at the lowest
# version its range allows (uv's lowest-direct), torch pinned to torch==$(TORCH_VERSION) CPU (its lowest
# allowed release would be a CUDA build of gigabytes), then a short train, the smoke sweep and
# `analyze compare` (tools/lowest_deps.py; about 15 min on 2 cores, most of it downloads).
lowest: install
	$(FETCH) mawps
	$(BIN)/python tools/lowest_deps.py
