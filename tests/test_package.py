"""dmlcore as an installable package: pyproject.toml agrees with requirements.txt, ships the data
files and the `dmlcore` command, and the README's library example runs as printed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import dmlcore
from dmlcore.cli import main

ROOT = Path(__file__).resolve().parents[1]
TEST_PACKAGES = {"pytest", "hypothesis", "playwright", "ivmodels", "pytest-xdist"}


def _pins(lines) -> dict[str, str]:
    out = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            out[name.strip().lower()] = version.strip()
    return out


def test_pyproject_pins_the_requirements():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    required = _pins((ROOT / "requirements.txt").read_text().splitlines())
    assert _pins(project["dependencies"]) == {k: v for k, v in required.items() if k not in TEST_PACKAGES}
    assert _pins(project["optional-dependencies"]["test"]) == {k: v for k, v in required.items() if k in TEST_PACKAGES}


def test_the_command_and_the_data_files_are_declared():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    module, name = config["project"]["scripts"]["dmlcore"].split("#")[0].strip().split(":")
    assert getattr(__import__(module, fromlist=[name]), name) is main     # what python -m dmlcore runs
    declared = config["tool"]["setuptools"]["package-data"]
    shipped = [p for p in (ROOT / "dmlcore").rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")]
    for path in shipped:                 # every data file the package holds is declared, or pip install loses it
        package = ".".join(path.parent.relative_to(ROOT).parts)
        owners = [(pkg, pattern) for pkg, patterns in declared.items() for pattern in patterns
                  if package.startswith(pkg) and path.relative_to(ROOT / pkg.replace(".", "/")).match(pattern)]
        assert owners, f"{path.relative_to(ROOT)} is not in pyproject.toml's package-data"
    assert re.fullmatch(r"\d+\.\d+\.\d+", dmlcore.__version__)


def test_the_public_face_lists_what_it_exports():
    assert dmlcore.__all__ and all(hasattr(dmlcore, name) for name in dmlcore.__all__)
    for name in ("CausalData", "load_dataset", "fit_run", "run_study", "RunStore", "DMLCMR", "METHODS",
                 "make_estimator", "OutcomeLearner", "ConditionalSampler"):
        assert name in dmlcore.__all__


def readme_example() -> str:
    """The Python block of the README's "Use it as a library" section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Use it as a library", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_the_readme_library_example_runs_as_printed(tmp_path):
    code = readme_example()
    assert len(code.strip().splitlines()) <= 10
    env = {**os.environ, "DMLCORE_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    first, second = done.stdout.strip().splitlines()
    assert first.startswith("{'mse': ") and "'mse_fresh'" in first
    mse, estimate, methods = second.split(" ", 2)
    assert float(mse) > 0 and float(estimate) < 0 and "'dml-cmr'" in methods   # demand falls with price
