#!/usr/bin/env bash
# The class measurement in one command (docs/class.md): 20 browsers click the demo within 10 s on a fresh
# server. The server with its workers, and the prober's browser, run in autogroups of their own at nice -10
# (bench/perf/class_load.py --server-nice), so that they come first and the 20 students' browsers on the same
# 2 cores get what is left, as when the students' browsers run on their own computers (root, for the -10).
# Run it when the machine is quiet: it prints the load first. Writes bench/results/class-load-20-local-<date>-class.json, adds it to docs/class.md's table
# of class runs, points the paragraph on the newest class run (class-verdict) at it and regenerates the docs' blocks;
# with fewer than 20 browsers or a loaded machine that paragraph says the run is a check, not the class measurement.
#
#   bash bench/perf/class_run.sh            # or: BROWSERS=20 SPREAD=10 bash bench/perf/class_run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BROWSERS=${BROWSERS:-20}
SPREAD=${SPREAD:-10}
NAME="class-load-${BROWSERS}-local-$(date -u +%Y-%m-%d-%H%M)-class.json"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
PYTHONPATH=. .venv/bin/python -m bench.perf.class_load --browsers "$BROWSERS" --spread "$SPREAD" --timeout 600 \
  --server-nice -10 --out "bench/results/$NAME"
.venv/bin/python - "$NAME" <<'PY'
import re, sys
from pathlib import Path
doc, name = Path("docs/class.md"), sys.argv[1]
text = doc.read_text()
marker = re.search(r"generated:class-load:(\S+) -->", text)
files = marker[1]
if name not in files.split(","):
    text = text.replace(f"generated:class-load:{files} ", f"generated:class-load:{files},{name} ")
newest = re.search(r"generated:class-verdict:(\S+) -->", text)[1]
text = text.replace(f"generated:class-verdict:{newest} ", f"generated:class-verdict:{name} ")
doc.write_text(text)
print(f"docs/class.md: the table of class runs now has a row for {name}; the paragraph on the newest run reads it")
PY
.venv/bin/python bench/docs.py --write --no-figures
