#!/usr/bin/env bash
# Create .venv (if missing) and install the pinned requirements into it. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
if ! python -c "import torch" 2>/dev/null; then
  pip install -q torch==2.13.0          # first, alone: the CPU wheel
fi
pip install -q -r requirements.txt
pip install -q --no-deps -r requirements-data.txt
