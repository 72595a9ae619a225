#!/usr/bin/env bash
# The one-click demo's four fits (dashboard/plan.py DEMO_DATA, DEMO_SETTINGS) through the CLI, with
# the debiased effect on and off (--no-debias), alternately, REPEATS times, under nice -n 10.
#
#   bash bench/perf/demo_debias_cost.sh REPEATS OUT.jsonl
#   bash bench/perf/demo_debias_cost.sh 3 bench/results/demo-debias-cost-2026-11-27.jsonl
#
# Each line of OUT is one command: repeat, method, debias (on/off), wall/user/sys seconds of the
# whole command (Python start-up included), the fit's own seconds (the record's), the 1-minute load
# average before and after, and the UTC time it ended. Odd repeats run "on" first, even ones "off".
set -euo pipefail
cd "$(dirname "$0")/../.."
repeats=$1 out=$2
py=${PYTHON:-$PWD/.venv/bin/python}
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
export DMLCORE_HOME=$home   # the fits are not kept in the user's run store
TIMEFORMAT='%R %U %S'
for rep in $(seq "$repeats"); do
  order="on off"; [ $((rep % 2)) -eq 0 ] && order="off on"
  for method in dml-cmr naive 2sls regression; do
    for mode in $order; do
      flag=(); [ "$mode" = off ] && flag=(--no-debias)
      case $method in   # the settings each method reads (the CLI refuses the others)
        dml-cmr) settings=(--learner gb --folds 5) ;; 2sls) settings=() ;; *) settings=(--learner gb) ;;
      esac
      load0=$(cut -d' ' -f1 /proc/loadavg)
      times=$( { time nice -n 10 "$py" -m dmlcore fit --dataset demand-iv --n 2000 --seed 0 --rho 0.9 \
                 --iv-strength 1.0 --method "$method" "${settings[@]}" "${flag[@]}" \
                 --json "$home/record.json" > /dev/null 2>&1; } 2>&1 )
      load1=$(cut -d' ' -f1 /proc/loadavg)
      "$py" - "$home/record.json" "$rep" "$method" "$mode" "$times" "$load0" "$load1" >> "$out" <<'P'
import json, sys, time
record = json.load(open(sys.argv[1]))
wall, user, system = map(float, sys.argv[5].split())
print(json.dumps({"repeat": int(sys.argv[2]), "method": sys.argv[3], "debias": sys.argv[4], "wall": wall,
                  "user": user, "sys": system, "fit_seconds": round(record["seconds"], 1),
                  "load_avg_1min": [float(sys.argv[6]), float(sys.argv[7])],
                  "ended_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
P
    done
  done
done
