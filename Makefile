# Set-up and the two everyday commands. Everything lives in .venv, made here.
#   make benchmark   install, then run a real default benchmark (ResNet-50,
#                    synthetic data, this machine, no cluster)
#   make test        install, then run the whole test suite and the
#                    mutation check
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BENCHMARK_ARGS ?= --model=resnet50 --batch_size=16 --num_batches=20 --num_warmup_batches=3
# Which TensorFlow to install (setup.cfg's extras): gpu when nvidia-smi sees a
# GPU, else cpu. Override with `make TF=cpu ...`.
TF ?= $(shell nvidia-smi -L >/dev/null 2>&1 && echo gpu || echo cpu)

.PHONY: install benchmark test test-fast mutations bytecode clean

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[$(TF),test]'
	touch $(STAMP)

install: $(STAMP)

benchmark: $(STAMP)
	$(PY) tf_cnn_benchmarks.py $(BENCHMARK_ARGS)

# Every test, slow and cluster ones included, then the mutation check (CI
# runs exactly this, through .ci/run). tests/run_suite.py runs the timed
# tests beside the compute ones (niced), then the quiet ones alone.
test: $(STAMP) bytecode
	$(PY) -m tests.run_suite -q -ra --durations=25 $(PYTEST_ARGS)
	$(PY) -m tests.mutations.check

# The checkout's bytecode, written once: where PYTHONDONTWRITEBYTECODE is set
# (CI's machines set it) every process the tests start would compile the
# harness again, 1.1 s of a trivial run's 7 s on a 2-core AVX2 host. Python
# still reads .pyc files under that setting, and recompiles a file newer
# than its .pyc.
bytecode: $(STAMP)
	$(PY) -m compileall -q -j 0 -x '/\.(venv|git)/' .

# Every listed breakage applied to a copy of the tree, its guarding tests run
# (tests/mutations/): each must turn them red (README gives its time).
mutations: $(STAMP) bytecode
	$(PY) -m tests.mutations.check $(MUTATION_ARGS)

# The quick subset for the edit-test loop.
test-fast: $(STAMP) bytecode
	$(PY) -m pytest -q -m 'not slow and not cluster' $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
