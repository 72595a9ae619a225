#!/usr/bin/env bash
# Create .venv (if missing), install the pinned requirements into it, and this checkout itself
# (editable: the `dmlcore` command, .venv/bin/dmlcore, runs this checkout's code). Safe to run again.
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
if [ ! -x .venv/bin/dmlcore ]; then
  pip install -q --no-deps -e .         # the requirements are in already
fi
