"""Studies: many fits over a grid as one job, on local worker processes or a Ray cluster.

``run_study(spec, out_dir)`` runs a grid (:mod:`~dmlcore.studies.spec`) on an executor
(:mod:`~dmlcore.studies.executors`), reusing the fits already in the run store
(:mod:`~dmlcore.studies.runner`), then writes fits.csv, summary.csv, paired.csv
(:mod:`~dmlcore.studies.summarize`) and report.html with PNG figures (:mod:`~dmlcore.studies.report`).

The names below are loaded on first use: ``dmlcore.runs`` itself uses the executors (bootstrap
refits), so importing them must not import the runner, which imports ``dmlcore.runs``.
"""

import importlib

_HOMES = {"get_executor": "executors", "run_fit_config": "runner", "run_study": "runner", "plan_study": "runner",
          "load_study": "runner", "StudyPlan": "runner", "StudyResult": "runner", "StudySpec": "spec",
          "config_key": "spec", "load_spec": "spec", "spec_from_dict": "spec", "spec_from_flags": "spec"}
__all__ = list(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'dmlcore.studies' has no attribute {name!r}")
    return getattr(importlib.import_module(f"dmlcore.studies.{_HOMES[name]}"), name)
