#!/usr/bin/env bash
# Run here (not on the GPU machine) before a GPU session: downloads into .whl/ the wheels of the
# libraries whose versions the GPU machine's python3 may not share with this project (pandas and
# scikit-learn as pinned in requirements.txt, plotly and linearmodels (not in its image) with pyhdfe, and statsmodels, formulaic, narwhals as installed in .venv; numpy, scipy and
# torch stay the machine's own), for its Python 3.12 on x86-64, and keeps .whl/ out of git.
# Carry .whl with the run (docs/gpu.md); bench/gpu.sh installs it.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .git/info .whl
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
pins=$(grep -E '^(pandas|scikit-learn|plotly)==' requirements.txt)
for name in narwhals linearmodels pyhdfe statsmodels formulaic interface_meta; do
  pins="$pins $name==$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('$name'))")"
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl $pins
ls -l .whl
