"""The methods the DML-CMR paper compares against, as dmlcore estimators.

IV: KIV (kernel IV), DFIV (deep feature IV), DeepGMM. Proximal causal learning: KPV (kernel
proxy variables), PMMR (proxy maximum moment restriction), NMMR (neural maximum moment
restriction; ``nmmr`` the U-statistic, ``nmmr-v`` the V-statistic). Each has ``fit(data,
monitor=None)`` and ``predict(X)`` on f's input columns (for PCL: the bridge h(a, w, x)).
Algorithms, defaults and the choices made are in docs/peers.md.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from dmlcore.data.roles import CausalData
from dmlcore.errors import DMLCoreError
from dmlcore.estimators.peers.deepgmm import DeepGMM
from dmlcore.estimators.peers.dfiv import DFIV
from dmlcore.estimators.peers.kiv import KIV
from dmlcore.estimators.peers.kpv import KPV
from dmlcore.estimators.peers.nmmr import NMMR
from dmlcore.estimators.peers.pmmr import PMMR


@dataclass(frozen=True)
class Peer:
    cls: type
    title: str
    learner: str            # what the run record's "learner" says: "kernel" or "nn"
    help: str
    epochs: str | None = None   # the constructor argument that ``epochs`` sets (None: closed form)
    fixed: tuple = ()           # constructor arguments the method name fixes


PEERS = {
    "kiv": Peer(KIV, "KIV", "kernel",
                "Kernel IV (Singh et al. 2019): two kernel ridge regressions with 100 random Fourier features, "
                "penalties chosen by its two-sample validation; a second for 10,000 rows."),
    "dfiv": Peer(DFIV, "DFIV", "nn",
                 "Deep feature IV (Xu et al. 2021): learned features, closed-form ridge in both stages, "
                 "alternating updates.", epochs="epochs"),
    "deepgmm": Peer(DeepGMM, "DeepGMM", "nn",
                    "DeepGMM (Bennett et al. 2019): a min-max game between f and an adversary with optimistic "
                    "Adam; minutes per fit.", epochs="max_epochs"),
    "kpv": Peer(KPV, "KPV", "kernel",
                "Kernel proxy variables (Mastouri et al. 2021): two kernel ridge stages with random Fourier "
                "features."),
    "pmmr": Peer(PMMR, "PMMR", "kernel",
                 "Proxy maximum moment restriction (Mastouri et al. 2021): closed-form kernel bridge with random "
                 "Fourier features."),
    "nmmr": Peer(NMMR, "NMMR-U", "nn",
                 "Neural maximum moment restriction (Kompa et al. 2022), U-statistic loss: a bridge network "
                 "trained on a kernel moment risk.", epochs="epochs"),
    "nmmr-v": Peer(NMMR, "NMMR-V", "nn",
                   "NMMR with the V-statistic loss (Kompa et al. 2022).", epochs="epochs", fixed=(("loss", "V"),)),
}


def make_peer(method: str, *, seed: int = 0, epochs: int | None = None, params: dict | None = None,
              device: str = "auto"):
    """The peer estimator ``method`` with ``params`` (its constructor's settings), ``epochs`` (networks
    only; the closed-form methods have none) and, for the networks, ``device``."""
    peer = PEERS[method]
    if params is not None and not isinstance(params, dict):
        raise DMLCoreError(f"The settings of {peer.title} must be a dict; got {type(params).__name__}.")
    params = dict(params or {})
    signature = inspect.signature(peer.cls).parameters
    known = [p for p in signature if p not in ("seed", "device") and p not in dict(peer.fixed)]
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise DMLCoreError(f"Unknown {peer.title} setting(s) {', '.join(map(repr, unknown))}; known: "
                           f"{', '.join(known)}.")
    if epochs is not None and peer.epochs:
        params.setdefault(peer.epochs, epochs)
    if "device" in signature:
        params["device"] = device
    return peer.cls(seed=seed, **params, **dict(peer.fixed))


def peer_problem(method: str, data: CausalData) -> str | None:
    """Why ``method`` cannot fit ``data`` (wrong problem, images for a kernel method), or None."""
    try:
        PEERS[method].cls.check_roles(data)
    except DMLCoreError as err:
        return str(err)
    return None


__all__ = ["PEERS", "Peer", "make_peer", "peer_problem", "KIV", "DFIV", "DeepGMM", "KPV", "PMMR", "NMMR"]
