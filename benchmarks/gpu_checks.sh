#!/usr/bin/env bash
# The GPU checks end to end, in one script sized for ~8 minutes of device time: train-step throughput, TFLOP/s,
# MFU (against 989 TFLOP/s bf16 for H100/H200) and peak memory for ALBERT-base/large, scan vs unrolled,
# remat on/off, with HF transformers (PyTorch eager, bf16 autocast) timed in the same run as the peer.
# Uses the machine's own python3 (its jax/flax/optax/torch); our package is imported from the checkout.
# Usage: bash benchmarks/gpu_checks.sh [OUT_DIR]      (on the device tool: OUT_DIR=$OUT)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-docs/benchmarks}}
mkdir -p "$OUT"
REPORT="$OUT/gpu-$(date +%Y-%m-%d).md"
export PYTHONPATH=$PWD XLA_PYTHON_CLIENT_MEM_FRACTION=0.9
PY=${PYTHON:-python3}
{
  echo "# GPU checks $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
  $PY -c "import jax, flax; print('jax', jax.__version__, 'flax', flax.__version__, jax.devices())"
} | tee "$REPORT"
run() { echo "+ $*" | tee -a "$REPORT"; timeout 150 $PY benchmarks/train_throughput.py "$@" 2>&1 | grep -v -i warn | tee -a "$REPORT"; }
run --preset albert-base  --seq 128 --batch 256 --steps 10 --dtype bfloat16 --peer
run --preset albert-base  --seq 512 --batch 64  --steps 10 --dtype bfloat16
run --preset albert-large --seq 512 --batch 64  --steps 10 --dtype bfloat16 --peer
run --preset albert-large --seq 512 --batch 64  --steps 10 --dtype bfloat16 --unrolled
run --preset albert-large --seq 512 --batch 128 --steps 10 --dtype bfloat16 --remat dots
run --preset bert-large   --seq 512 --batch 64  --steps 10 --dtype bfloat16
echo "report: $REPORT"
