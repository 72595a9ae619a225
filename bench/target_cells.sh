#!/usr/bin/env bash
# Issue 45: DML-CMR's nuisance_choice="target" on the benchmark's own cells (demand-iv, N = 5000, K = 10,
# learner nn, seeds 0-19, grid MSE), with today's default (own) and the nuisances named nn re-run beside it
# on the same code: the stored rows of those two were made with older code (seed 0 at IV strength 0.4:
# default 0.2180 today against 0.2187 stored, named nn 0.3027 against 0.3061).
#   nice -n 10 bash bench/target_cells.sh [STRENGTHS] [SEEDS] [CONFIGS]
#       (defaults "0.4 1.0 0.01", "0..19" and "target default named"; "autonn" adds the outcome model by auto
#       with the network's distribution model, --sampler nn: the rule of docs/error-budget.md's rows)
# The other cells of the tables: DATASET (demand-iv or demand-pcl, default demand-iv), N (default 5000) and LEARNER
# (nn or gb, default nn), e.g.
#   N=1000 nice -n 10 bash bench/target_cells.sh 1.0 "$(seq 0 19)" "target default"
#   DATASET=demand-pcl nice -n 10 bash bench/target_cells.sh - "$(seq 0 19)" "target default"
# (demand-pcl has no instrument: its strength is "-", and the command names none).
# Per seed, the configurations one after another (one process, one thread: a partial run stays paired),
# each row appended to its CSV as it finishes. Each command's date, machine, commit and 1-minute
# load before and after go to bench/results/authors/target-cells.jsonl, the fits' standard error to target-cells.log.
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
STRENGTHS=${1:-0.4 1.0 0.01}
SEEDS=${2:-$(seq 0 19)}
CONFIGS=${3:-target default named}
DATASET=${DATASET:-demand-iv}
N=${N:-5000}
LEARNER=${LEARNER:-nn}
R=${R:-bench/results/authors}   # the rows' folder (a run from a snapshot of the code writes to the worktree)
LOG=$R/target-cells.jsonl
COMMIT=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
load() { cut -d' ' -f1 /proc/loadavg; }
for k in $STRENGTHS; do
  case "$k" in
    -) cell=$DATASET-$LEARNER-$N; strength=""; logged=null ;;
    1.0) cell=$DATASET-$LEARNER-$N; strength="--iv-strength $k"; logged=$k ;;
    *) cell=$DATASET-$LEARNER-$N-strength$k; strength="--iv-strength $k"; logged=$k ;;
  esac
  for s in $SEEDS; do
    for how in $CONFIGS; do
      case "$how" in
        target) extra="--nuisance-choice target" ;;
        default) extra="" ;;
        named) extra="--outcome-learner nn --sampler nn" ;;
        autonn) extra="--sampler nn" ;;
      esac
      out=$R/$cell-target$([ "$how" = target ] || echo "-$how").csv
      cmd="python -m dmlcore bench --dataset $DATASET $strength --sizes $N --methods dml-cmr --learner $LEARNER --reps 1 --seed-offset $s --threads 1 --no-debias $extra --out bench/results/authors/$(basename "$out")"
      start=$(date -u +%FT%TZ); before=$(load)
      $PY -m dmlcore bench --dataset "$DATASET" $strength --sizes "$N" --methods dml-cmr --learner "$LEARNER" \
        --reps 1 --seed-offset "$s" --threads 1 --no-debias $extra --out "$out" > /dev/null 2>> "$R/target-cells.log"
      rc=$?
      printf '{"command": "%s", "dataset": "%s", "n": %s, "learner": "%s", "seed": %s, "iv_strength": %s, "config": "%s", "start": "%s", "end": "%s", "load_before": %s, "load_after": %s, "rc": %s, "commit": "%s", "machine": "%s, %s CPUs", "nice": %s}\n' \
        "$cmd" "$DATASET" "$N" "$LEARNER" "$s" "$logged" "$how" "$start" "$(date -u +%FT%TZ)" "$before" "$(load)" "$rc" "$COMMIT" "$(uname -m)" "$(nproc)" "$(nice)" >> "$LOG"
    done
  done
done
