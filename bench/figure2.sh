#!/usr/bin/env bash
# The paper's Figure 2 as one study: demand-iv (the authors' standardized noise), N = 1000, 2000,
# 5000, 10000; DML-CMR, CE-DML-CMR and the naive plug-in; neural-network learners, K = 10; seeds
# 0-19 (240 fits; the same data for every method at a seed). Fits already in the run store
# ($DMLCORE_HOME, default ~/.dmlcore) are reused, so an interrupted run resumes where it stopped.
#
#   bash bench/figure2.sh [OUT_DIR] [more study flags]
#   bash bench/figure2.sh bench/results/figure2 --jobs 2                      # this machine, 2 workers
#   bash bench/figure2.sh /tmp/fig2 --executor ray --address HEAD:6379        # a Ray cluster
#
# Writes OUT_DIR/fits.csv, summary.csv, paired.csv, report.html, mse_by_n.png, paired_differences.png.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench/results/figure2}
shift $(( $# > 0 ? 1 : 0 ))
exec .venv/bin/python -m dmlcore study --dataset demand-iv --sizes 1000,2000,5000,10000 \
    --methods dml-cmr,ce-dml-cmr,naive --learner nn --folds 10 --seeds 0-19 --jobs 2 --out "$OUT" "$@"
