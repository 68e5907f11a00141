#!/usr/bin/env bash
# The GPU checks end to end, in one script sized for under 8 minutes of device time, through benchmarks/run.py:
#   1. the matmul ceiling (f32 and bf16: jax, torch) the rest is read against;
#   2. MFU (against 989 TFLOP/s bf16 for H100/H200, FLOPs per applied layer: AlbertConfig.flops_per_token) and
#      share of the ceiling of the pretraining step, bf16 (with the attention the trainer takes there: cuDNN's fused
#      kernel, model.attention_impl=auto), for albert-base and albert-large (HF transformers timed
#      as the peer for albert-base) and albert-xxlarge, at seq 128 and 512;
#   3. inference: encoder forward vs HF, and rt_sentiment dev classification padded / bucketed / HF.
# Each command has its own timeout (their sum is under 8 minutes). Optional extras (each a few minutes):
# MEMORY=1 (sharing x remat at albert-base, 4 points), COMPILE=1 (compile time against depth).
# Uses the machine's own python3 (its jax/flax/optax/torch); our package is imported from the checkout.
# Usage: bash benchmarks/gpu_checks.sh [OUT_DIR]          (on the device tool: OUT_DIR=$OUT)
#        SMOKE=1 PYTHON=.venv/bin/python bash benchmarks/gpu_checks.sh /tmp/out   (CPU check: tiny models)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-docs/benchmarks}}
mkdir -p "$OUT"
REPORT="$OUT/gpu-$(date +%Y-%m-%d).md"
# No preallocation: JAX takes what it uses, so the HF peer timed after it in the same process finds the rest.
export PYTHONPATH=$PWD XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_MEM_FRACTION=0.9
PY=${PYTHON:-python3}
if [ "${SMOKE:-0}" = 1 ]; then
  Q=(--quick); BIG=tiny; XXL=tiny; SEQS=32,64; TOK_BIG=256; TOK_XXL=128; STEPS=2; DT=float32
else
  Q=(); BIG=albert-base,albert-large; XXL=albert-xxlarge; SEQS=128,512; TOK_BIG=32768; TOK_XXL=8192; STEPS=10
  DT=bfloat16
fi
{
  echo "# GPU checks $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
  $PY -c "import jax, flax; print('jax', jax.__version__, 'flax', flax.__version__, jax.devices())"
} | tee "$REPORT"
FAILED=0
run() {  # run SECONDS SUITE [args...]: one run.py suite under its own timeout; its table goes to the report
  local t=$1; shift
  echo "+ run.py $* (timeout ${t}s)" | tee -a "$REPORT"
  timeout "$t" $PY benchmarks/run.py "$@" "${Q[@]}" --out "$OUT" > "$OUT/log-$1${TAG:-}.txt" 2>&1
  local rc=$?
  [ $rc -ne 0 ] && { FAILED=1; echo "FAILED (exit $rc): tail of $OUT/log-$1${TAG:-}.txt" | tee -a "$REPORT"
                     tail -5 "$OUT/log-$1${TAG:-}.txt" | tee -a "$REPORT"; }
  return 0
}
md() { [ -f "$OUT/$1.md" ] && sed 1,2d "$OUT/$1.md" | tee -a "$REPORT"; }

run 45 ceiling && md ceiling
C=(--ceiling "$OUT/ceiling.json")
TAG=-mfu run 180 train --models "$BIG" --seqs "$SEQS" --dtype "$DT" --tokens "$TOK_BIG" --steps "$STEPS" \
  --tag mfu "${C[@]}" && md train-mfu
TAG=-mfu-xxlarge run 150 train --models "$XXL" --seqs "$SEQS" --dtype "$DT" --tokens "$TOK_XXL" --steps 5 \
  --peer off --tag mfu-xxlarge "${C[@]}" && md train-mfu-xxlarge
run 90 inference "${C[@]}" && md inference
if [ "${MEMORY:-0}" = 1 ]; then
  run 300 memory --sharing all,none --remat none,full --dtype "$DT" "${C[@]}" && md memory
fi
if [ "${COMPILE:-0}" = 1 ]; then
  run 300 compile "${C[@]}" && md compile
fi
echo "report: $REPORT"
exit $FAILED
