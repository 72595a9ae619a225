#!/usr/bin/env bash
# The accuracy benchmarks reported in docs/benchmarks.md (each appends to its CSV as it goes).
set -u
cd "$(dirname "$0")/.."
PY=.venv/bin/python
R=bench/results
M=dml-cmr,ce-dml-cmr,naive,sieve-2sls
$PY -m dmlcore bench --dataset demand-iv --sizes 2000,5000 --methods $M --learner nn --reps 10 --out $R/demand-iv-nn.csv
$PY -m dmlcore bench --dataset demand-iv --iv-strength 0.4 --sizes 2000,5000 --methods $M --learner nn --reps 10 --out $R/demand-iv-weak-nn.csv
$PY -m dmlcore bench --dataset demand-iv --sizes 2000,5000 --methods dml-cmr,ce-dml-cmr,naive --learner gb --reps 10 --out $R/demand-iv-gb.csv
$PY -m dmlcore bench --dataset demand-pcl --sizes 1000,5000 --methods $M --learner nn --reps 10 --out $R/demand-pcl-nn.csv
# image data: a CNN fit takes minutes on 2 cores, hence fewer seeds
I=naive,ce-dml-cmr,dml-cmr
$PY -m dmlcore bench --dataset digits-iv --sizes 1000 --methods $I --learner nn --reps 5 --out $R/digits-iv-nn.csv
$PY -m dmlcore bench --dataset digits-iv --sizes 5000 --methods $I --learner nn --reps 3 --out $R/digits-iv-nn.csv
$PY -m dmlcore bench --dataset dsprites-pcl --sizes 1000 --methods $I --learner nn --reps 2 --out $R/dsprites-pcl-nn.csv
$PY -m dmlcore bench --dataset dsprites-pcl --sizes 5000 --methods $I --learner nn --reps 1 --threads 2 --out $R/dsprites-pcl-nn.csv   # about an hour
for m in 1 16; do
  $PY -m dmlcore bench --dataset demand-iv --sizes 5000 --methods ce-dml-cmr --learner nn --reps 5 --n-draws $m --out $R/draws-$m.csv
done
