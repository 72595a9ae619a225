#!/usr/bin/env bash
# Issue 17's GPU measurements in one go (docs/gpu.md): demand-iv DML-CMR (K = 10, N = 5000) and
# dsprites-pcl at N = 1000 and 5000 (naive, CE-DML-CMR, DML-CMR) on CUDA, MSE and seconds as CSV.
# Meant for a lent GPU machine: its own python3 holds torch; wheels in .whl/ (bench/gpu_wheels.sh)
# are installed first when present. Rows go to $OUT when it is set, else to bench/results/.
# GPU_BUDGET (seconds, default 420) bounds the fits; the whole script is killed 90 s after it.
# Extra arguments go to bench/gpu_bench.py (run as python3 -m bench.gpu_bench) (e.g. --only dsprites-pcl:5000:dml-cmr).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
BUDGET=${GPU_BUDGET:-420}
DEST=${OUT:-bench/results}
export PYTHONUNBUFFERED=1
SITE=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
if compgen -G ".whl/*.whl" >/dev/null; then
  if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      && PYTHONPATH=$SITE "$PY" -c "import pandas, sklearn, plotly, linearmodels"; then
    export PYTHONPATH=$SITE
  else
    echo "note: the wheels in .whl did not install or import; using the machine's own pandas and scikit-learn" >&2
  fi
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv
mkdir -p "$DEST"
timeout -s INT $((${BUDGET%.*} + 90)) "$PY" -m bench.gpu_bench --budget "$BUDGET" --out "$DEST" "$@" 2>&1 \
  | tee "$DEST/gpu-$(date +%Y%m%d-%H%M%S).log"
