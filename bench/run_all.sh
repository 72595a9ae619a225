#!/usr/bin/env bash
# The accuracy benchmarks reported in docs/benchmarks.md (each appends to its CSV as it goes).
#   bash bench/run_all.sh [--noise-scale standardized|raw]   (demand-iv and digits-iv; default standardized)
set -u
cd "$(dirname "$0")/.."
NS=standardized
case "${1:-}" in
  "") ;;
  --noise-scale) NS="${2:-}" ;;
  --noise-scale=*) NS="${1#--noise-scale=}" ;;
  *) echo "error: unknown argument '$1'; the only option is --noise-scale standardized|raw" >&2; exit 2 ;;
esac
case "$NS" in
  standardized|raw) ;;
  *) echo "error: --noise-scale must be standardized or raw; got '$NS'" >&2; exit 2 ;;
esac
PY=.venv/bin/python
R=bench/results
M=dml-cmr,ce-dml-cmr,naive,sieve-2sls
N="--noise-scale $NS"   # the rows record it in their noise_scale column
$PY -m dmlcore bench --dataset demand-iv $N --sizes 2000,5000 --methods $M --learner nn --reps 10 --out $R/demand-iv-nn.csv
$PY -m dmlcore bench --dataset demand-iv $N --iv-strength 0.4 --sizes 2000,5000 --methods $M --learner nn --reps 10 --out $R/demand-iv-weak-nn.csv
$PY -m dmlcore bench --dataset demand-iv $N --sizes 2000,5000 --methods dml-cmr,ce-dml-cmr,naive --learner gb --reps 10 --out $R/demand-iv-gb.csv
$PY -m dmlcore bench --dataset demand-pcl --sizes 1000,5000 --methods $M --learner nn --reps 10 --out $R/demand-pcl-nn.csv
# image data: a CNN fit takes minutes on 2 cores, hence fewer seeds
I=naive,ce-dml-cmr,dml-cmr
$PY -m dmlcore bench --dataset digits-iv $N --sizes 1000 --methods $I --learner nn --reps 5 --out $R/digits-iv-nn.csv
$PY -m dmlcore bench --dataset digits-iv $N --sizes 5000 --methods $I --learner nn --reps 5 --out $R/digits-iv-nn.csv
$PY -m dmlcore bench --dataset dsprites-pcl --sizes 1000 --methods $I --learner nn --reps 2 --out $R/dsprites-pcl-nn.csv
$PY -m dmlcore bench --dataset dsprites-pcl --sizes 5000 --methods $I --learner nn --reps 1 --threads 2 --out $R/dsprites-pcl-nn.csv   # about an hour
for m in 1 16; do
  $PY -m dmlcore bench --dataset demand-iv $N --sizes 5000 --methods ce-dml-cmr --learner nn --reps 5 --n-draws $m --out $R/draws-$m.csv
done
