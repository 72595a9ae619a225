"""Studies: many fits over a grid as one job, on local worker processes or a Ray cluster.

``run_study(spec, out_dir)`` runs a grid (:mod:`~dmlcore.studies.spec`) on an executor
(:mod:`dmlcore.executors`), reusing the fits already in the run store
(:mod:`~dmlcore.studies.runner`), then writes fits.csv, summary.csv, paired.csv
(:mod:`~dmlcore.studies.summarize`) and report.html with PNG figures (:mod:`~dmlcore.studies.report`).
"""

from dmlcore.executors import get_executor
from dmlcore.studies.runner import (StudyPlan, StudyResult, load_study, plan_study, run_fit_config, run_study)
from dmlcore.studies.spec import StudySpec, config_key, load_spec, spec_from_dict, spec_from_flags

__all__ = ["get_executor", "run_fit_config", "run_study", "plan_study", "load_study", "StudyPlan", "StudyResult",
           "StudySpec", "config_key", "load_spec", "spec_from_dict", "spec_from_flags"]
