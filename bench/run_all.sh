#!/usr/bin/env bash
# The accuracy benchmarks reported in docs/benchmarks.md (each appends to its CSV as it goes).
set -u
cd "$(dirname "$0")/.."
PY=.venv/bin/python
R=bench/results
$PY -m dmlcore bench --dataset demand-iv --sizes 2000,5000 --methods dml-cmr,ce-dml-cmr,naive --learner nn --reps 10 --out $R/demand-iv-nn.csv
$PY -m dmlcore bench --dataset demand-iv --sizes 2000,5000 --methods dml-cmr,ce-dml-cmr,naive --learner gb --reps 10 --out $R/demand-iv-gb.csv
$PY -m dmlcore bench --dataset demand-pcl --sizes 1000,5000 --methods dml-cmr,ce-dml-cmr,naive --learner nn --reps 10 --out $R/demand-pcl-nn.csv
for m in 1 16; do
  $PY -m dmlcore bench --dataset demand-iv --sizes 5000 --methods ce-dml-cmr --learner nn --reps 5 --n-draws $m --out $R/draws-$m.csv
done
