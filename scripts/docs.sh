#!/usr/bin/env bash
# Build the documentation site into site/ (see docs/making.md). Needs the network only the first
# time, to install the pinned requirements-docs.txt into .venv; later builds are offline.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  bash scripts/setup.sh
fi
if ! .venv/bin/python - <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

pins = [line.split("==") for line in Path("requirements-docs.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")]
try:
    missing = [name for name, pinned in pins if version(name) != pinned]
except PackageNotFoundError:
    missing = ["?"]
sys.exit(1 if missing else 0)
PY
then
  .venv/bin/pip install -q -r requirements-docs.txt
fi
.venv/bin/python bench/docs.py --check
NO_MKDOCS_2_WARNING=1 .venv/bin/python -m mkdocs build --strict --site-dir site "$@"
