"""What ``dmlcore fit`` imports (issue 45, item 3): facts about modules, not timings.

One fresh interpreter imports ``dmlcore.cli`` (what ``python -m dmlcore fit`` and every refit worker import) and
then runs a tiny DML-CMR fit with networks; the test reads which modules it loaded. None of ``DENIED`` may be
among them: each costs import time in the command's process and again in each loky worker, and a default fit
needs none of them (bench/perf/import_time.py measures what they cost). Also: the CPU AdamW that keeps
``torch._dynamo`` out computes what ``torch.optim.AdamW`` does, bit for bit.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bench.perf.import_time import parse_importtime, shares
from dmlcore.learners.nn import CpuAdamW, adamw

ROOT = Path(__file__).resolve().parents[1]

# module (or package prefix) -> why a fit must not import it
DENIED = {
    "streamlit": "dmlcore imports no Streamlit (the dashboard's)",
    "dashboard": "the dashboard sits above dmlcore",
    "dmlcore.teaching": "lessons: the Learn page's, not a fit's",
    "dmlcore.jobs": "the dashboard's job queue, not the CLI's",
    "sklearn.datasets": "only the digits design loads scikit-learn's digits (late, in digit_pools)",
    "pyarrow.parquet": "only reading a Parquet file needs it (late, in data/io.py)",
    "linearmodels": "only the linear IV fits and the first-stage diagnostics call it (late, in the functions that do)",
    "torch._dynamo": "imported by torch.optim's first step: seconds, with sympy and torch.distributed (CpuAdamW)",
    "sympy": "comes with torch._dynamo",
    "ray": "only DMLCORE_EXECUTOR=ray starts it",
    "matplotlib": "the figures are plotly's",
}

PROBE = """
import json, sys
import dmlcore.cli
after_import = sorted(sys.modules)
from dmlcore import fit_run, simulate_demand_iv
sim = simulate_demand_iv(n=120, seed=0)
fit_run(sim.data, "dml-cmr", truth=sim.truth, learner="nn", outcome_learner="nn", sampler="nn", folds=2, epochs=1,
        n_draws=2, debias=False, jobs=1)
print(json.dumps({"import": after_import, "fit": sorted(sys.modules), "file": dmlcore.cli.__file__}))
"""


# a fit's record has the first-stage diagnostics, which call linearmodels: denied at import only
NEEDED_BY_A_FIT = {"linearmodels"}


def _loaded(names: list[str], prefix: str) -> list[str]:
    return [n for n in names if n == prefix or n.startswith(prefix + ".")]


@pytest.fixture(scope="module")
def modules() -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    env.pop("DMLCORE_EXECUTOR", None)
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(out["file"]).resolve().is_relative_to(ROOT), out["file"]    # this tree's dmlcore, not another
    return out


def test_the_cli_imports_nothing_denied(modules):
    assert "dmlcore.cli" in modules["import"] and "torch" in modules["import"]   # the probe saw the real import
    found = {prefix: _loaded(modules["import"], prefix)[:3] for prefix in DENIED}
    found = {prefix: names for prefix, names in found.items() if names}
    assert not found, "import dmlcore.cli loaded " + "; ".join(f"{p} ({DENIED[p]}): {n}" for p, n in found.items())


def test_a_network_fit_imports_nothing_denied(modules):
    assert "dmlcore.learners.nn" in modules["fit"]
    assert "linearmodels.iv" in modules["fit"]      # the exception below is still needed
    found = {prefix: _loaded(modules["fit"], prefix)[:3] for prefix in DENIED if prefix not in NEEDED_BY_A_FIT}
    found = {prefix: names for prefix, names in found.items() if names}
    assert not found, "a tiny nn fit loaded " + "; ".join(f"{p} ({DENIED[p]}): {n}" for p, n in found.items())


def test_cpu_adamw_is_torch_adamw_bit_for_bit():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    unused = torch.nn.Parameter(torch.randn(4))       # no gradient ever: both optimizers leave it alone
    ours_net, ours_unused, start = copy.deepcopy(net), copy.deepcopy(unused), copy.deepcopy(net)
    theirs = torch.optim.AdamW([*net.parameters(), unused], lr=0.01, weight_decay=0.05)
    ours = adamw([*ours_net.parameters(), ours_unused], {"lr": 0.01, "weight_decay": 0.05}, "cpu")
    assert isinstance(ours, CpuAdamW)
    for _ in range(60):
        x, y = torch.randn(16, 3), torch.randn(16, 1)
        for model, opt in ((net, theirs), (ours_net, ours)):
            opt.zero_grad(set_to_none=True)
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
    for a, b in zip([*net.parameters(), unused], [*ours_net.parameters(), ours_unused]):
        assert torch.equal(a, b)
    assert not any(torch.equal(a, b) for a, b in zip(net.parameters(), start.parameters()))   # they did train
    assert torch.equal(unused, ours_unused) and ours.steps[-1] == 0


def test_the_import_bench_reads_importtime_lines():
    text = ("import time: self [us] | cumulative | imported package\n"
            "import time:       100 |        100 |   torch._C\n"
            "import time:      2000 |       2100 | torch\n"
            "import time:        50 |         50 |     dmlcore.errors\n"
            "import time:         7 |       2157 | dmlcore\n")
    rows = parse_importtime(text)
    assert rows == [(100, 1, "torch._C"), (2000, 0, "torch"), (50, 2, "dmlcore.errors"), (7, 0, "dmlcore")]
    assert shares(rows) == {"torch": 2, "dmlcore": 0, "(rest)": 0}
