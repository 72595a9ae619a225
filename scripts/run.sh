#!/usr/bin/env bash
# Set up (first time) and start the dashboard on http://127.0.0.1:8501 with the simulated demo data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m streamlit run app.py --server.address 127.0.0.1 "$@"
