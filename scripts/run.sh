#!/usr/bin/env bash
# Set up (first time) and start the dashboard on http://127.0.0.1:8501 with the simulated demo data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The teacher's code opens the Class page's pooled view (docs/class.md); keep the one given, else make one.
export DMLCORE_TEACHER_CODE="${DMLCORE_TEACHER_CODE:-$(.venv/bin/python -c 'import secrets; print(secrets.token_hex(3))')}"
echo "Teacher code for the Class page: ${DMLCORE_TEACHER_CODE}"
exec .venv/bin/python -m streamlit run app.py --server.address 127.0.0.1 "$@"
