#!/usr/bin/env bash
# The Card multi-model table (README's cli:card-table example) as LaTeX, compiled to PDF and a PNG for
# docs/linear-iv.md: needs pdflatex with booktabs and graphicx (Debian: texlive-latex-base texlive-latex-recommended) and
# pdftoppm (poppler-utils). Usage: bash bench/card_table_pdf.sh [OUT.png]   (default docs/img/linear-iv/card-table.png)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/docs/img/linear-iv/card-table.png}"
py="${PYTHON:-$root/.venv/bin/python}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
"$py" -c "from linearmodels.datasets import card; t = card.load(); t['region'] = t.filter(like='reg66').to_numpy().argmax(1) + 1; t.to_csv('card.csv', index=False)"
base="--csv card.csv --outcome lwage --treatment educ --instrument nearc4"
cov="exper,expersq,black,smsa,south,smsa66"
dummies="$cov,reg662,reg663,reg664,reg665,reg666,reg667,reg668,reg669"
"$py" -m dmlcore fit $base --covariates "$dummies" --method 2sls --cov robust --json 2sls.json > /dev/null 2>&1
"$py" -m dmlcore fit $base --covariates "$dummies" --method liml --cov robust --json liml.json > /dev/null 2>&1
"$py" -m dmlcore fit $base --covariates "$cov" --absorb region --method 2sls --cov robust --json fe.json > /dev/null 2>&1
"$py" -m dmlcore fit $base --covariates "$cov" --absorb region --method 2sls --cov clustered --cluster region \
    --small --fixef-k nested --json clustered.json > /dev/null 2>&1
"$py" -m dmlcore table ols:2sls.json 2sls.json liml.json fe.json clustered.json --keep educ,exper,expersq,black \
    --label "educ=Years of schooling" --label "lwage=log wage" --label "exper=Experience" \
    --label "expersq=Experience²" --label "black=Black" --title OLS --title 2SLS --title LIML \
    --title "2SLS, region FE" --title "2SLS, clustered" --out card.tex
printf '%s\n' '\documentclass{article}' '\usepackage[T1]{fontenc}' '\usepackage[utf8]{inputenc}' \
    '\usepackage{booktabs}' '\usepackage{graphicx}' '\usepackage[margin=1in]{geometry}' '\pagestyle{empty}' '\begin{document}' \
    '\input{card.tex}' '\end{document}' > doc.tex
pdflatex -interaction=nonstopmode -halt-on-error doc.tex > latex.log
if grep -q "Overfull" latex.log; then grep "Overfull" latex.log; fi
pdftoppm -png -r 110 -singlefile -x 60 -y 90 -W 800 -H 560 doc.pdf card
mkdir -p "$(dirname "$out")"
cp card.png "$out"
echo "wrote $out"
