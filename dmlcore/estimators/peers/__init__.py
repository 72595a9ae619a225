"""The methods the DML-CMR paper compares against, as dmlcore estimators.

IV: KIV (kernel IV), DFIV (deep feature IV), DeepGMM. Proximal causal learning: KPV (kernel
proxy variables), PMMR (proxy maximum moment restriction), NMMR (neural maximum moment
restriction; ``nmmr`` the U-statistic, ``nmmr-v`` the V-statistic). Each follows the estimator
contract (:mod:`dmlcore.estimators._base`): ``fit(data, *, callback=None, should_stop=None)``
and ``predict(X)`` on f's input columns (for PCL: the bridge h(a, w, x)). Their registry
entries (titles, help, the setting ``epochs`` maps to) are in :mod:`dmlcore.estimators._registry`.
Algorithms, defaults and the choices made are in docs/peers.md.
"""

from dmlcore.estimators.peers.deepgmm import DeepGMM
from dmlcore.estimators.peers.dfiv import DFIV
from dmlcore.estimators.peers.kiv import KIV
from dmlcore.estimators.peers.kpv import KPV
from dmlcore.estimators.peers.nmmr import NMMR
from dmlcore.estimators.peers.pmmr import PMMR

__all__ = ["KIV", "DFIV", "DeepGMM", "KPV", "PMMR", "NMMR"]
