#!/usr/bin/env bash
# Set up (first time) and run the whole test suite, browser tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq chromium chromium-driver fonts-dejavu-core) >/dev/null
  elif command -v sudo >/dev/null; then
    (sudo apt-get update -qq && sudo apt-get install -y -qq chromium chromium-driver fonts-dejavu-core) >/dev/null
  else
    echo "note: /usr/bin/chromium is missing; the browser tests will be skipped" >&2
  fi
fi
exec .venv/bin/python -m pytest -q "$@"
