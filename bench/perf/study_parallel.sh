#!/usr/bin/env bash
# Parallel efficiency of a 40-fit study on this machine: the same study (demand-iv, N = 2000,
# DML-CMR and the naive plug-in, nn learners, K = 10, seeds 0-19) with --jobs 1, --jobs 2 and a
# local Ray instance with 2 CPUs, each in a fresh run store so that every fit runs. Keeps each run's
# fits.csv, summary.csv and paired.csv and its /usr/bin/time log in bench/results/study40-<run>*.
#
#   bash bench/perf/study_parallel.sh            # all three runs, one after another
#   bash bench/perf/study_parallel.sh jobs2      # one of: jobs1 jobs2 ray2
set -euo pipefail
cd "$(dirname "$0")/../.."
R=bench/results
declare -A FLAGS=([jobs1]="--jobs 1" [jobs2]="--jobs 2" [ray2]="--executor ray --jobs 2")
for run in "${@:-jobs1 jobs2 ray2}"; do
  for name in $run; do
    home=$(mktemp -d) out=$(mktemp -d)
    DMLCORE_HOME=$home /usr/bin/time -v .venv/bin/python -m dmlcore study --dataset demand-iv --sizes 2000 \
        --methods dml-cmr,naive --learner nn --folds 10 --seeds 0-19 ${FLAGS[$name]} --out "$out" \
        > "$R/study40-$name.log" 2>&1
    for f in fits summary paired; do cp "$out/$f.csv" "$R/study40-$name-$f.csv"; done
    rm -rf "$home" "$out"
    grep -E "fits run|Elapsed \(wall|Maximum resident" "$R/study40-$name.log"
  done
done
