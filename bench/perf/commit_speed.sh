#!/usr/bin/env bash
# Time one CLI fit in this work tree and at another commit, alternately, on the same machine.
#
#   bash bench/perf/commit_speed.sh REV REPEATS OUT.jsonl FIT-ARGS...
#   bash bench/perf/commit_speed.sh ad7db5d 2 bench/results/nmmr-kernel-floor-cli.jsonl \
#       --dataset demand-pcl --n 1000 --method nmmr --seed 0 --threads 1
#
# REV is checked out in a temporary git worktree (it uses this tree's .venv). Each line of OUT
# is one fit: the commit, the fit's arguments, its own seconds and MSE, the 1-minute load average.
set -euo pipefail
cd "$(dirname "$0")/../.."
rev=$1 repeats=$2 out=$3; shift 3
other=$(mktemp -d)
git worktree add -q --detach "$other" "$rev"
trap 'git worktree remove --force "$other"; rm -rf "$other.home"' EXIT
here=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- dmlcore || echo "+changes")
there=$(git -C "$other" rev-parse --short HEAD)
py=$PWD/.venv/bin/python
export DMLCORE_HOME=$other.home   # the fits are not kept in the user's run store
for i in $(seq "$repeats"); do
  for tree in "$PWD:$here" "$other:$there"; do
    dir=${tree%%:*} commit=${tree##*:}
    record=$(mktemp)
    (cd "$dir" && "$py" -m dmlcore fit "$@" --json "$record" > /dev/null)
    "$py" - "$record" "$commit" "$*" >> "$out" <<'P'
import json, os, sys
record = json.load(open(sys.argv[1]))
print(json.dumps({"commit": sys.argv[2], "args": sys.argv[3], "seconds": record["seconds"], "mse": record["mse"],
                  "load_avg_1min": os.getloadavg()[0]}))
P
    rm -f "$record"
  done
done
tail -n $((2 * repeats)) "$out"
