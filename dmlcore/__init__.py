"""dmlcore: double machine learning for conditional moment restrictions (IV and proximal learning)."""

from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import simulate_demand_iv, simulate_demand_pcl
from dmlcore.errors import DMLCoreError, FitCancelled, FitDiverged
from dmlcore.estimators.dml import CEDMLCMR, DMLCMR, NaivePlugIn
from dmlcore.runs import fit_run, make_estimator

__version__ = "0.2.0"
__all__ = ["CausalData", "simulate_demand_iv", "simulate_demand_pcl", "DMLCoreError", "FitCancelled",
           "FitDiverged", "DMLCMR", "CEDMLCMR", "NaivePlugIn", "fit_run", "make_estimator"]
