"""Prepare the class: run every slow Learn experiment once, before class, and keep the results on
disk, so that they survive a restart of the server (session 1 to session 3) and every tab opens at
once.

    python -m dmlcore.teaching.prepared [--only NAME ...] [--list]

Each result is pickled to ``$DMLCORE_HOME/teaching/NAME.pkl`` (``DMLCORE_HOME`` defaults to
``~/.dmlcore``, the run store's folder) with a fingerprint of dmlcore's source: a result computed by
other code is not used (:func:`load` returns None, and the page computes afresh). The names are the
Learn page's (:data:`SLOW`); the dashboard looks here before it offers a button
(dashboard/learn/common.slow) and for the Card tab's linear steps.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import time
from functools import lru_cache
from pathlib import Path

from threadpoolctl import threadpool_limits

from dmlcore.data.simulate import IV_STRENGTH, RHO
from dmlcore.errors import DMLCoreError
from dmlcore.teaching import card, demand, nuisance, robust

# the Ticket demand tab's sliders as it opens: demand-iv's declared strength and confounding (dmlcore.data.simulate)
DEMAND_DEFAULTS = dict(strength=IV_STRENGTH.default, rho=RHO.default, n=1000, seed=0)


def demand_key(strength: float, rho: float, n: int, seed: int, with_naive: bool = False) -> str:
    """The name of the Ticket demand tab's fits at these settings."""
    return f"demand-fits-{strength:g}-{rho:g}-{n}-{seed}" + ("-naive" if with_naive else "")


def band_key(strength: float, rho: float, n: int, seed: int) -> str:
    """The name of the Ticket demand tab's band fit at these settings."""
    return f"demand-band-{strength:g}-{rho:g}-{n}-{seed}"


def _compare(setting: str):
    return lambda: nuisance.compare_methods(setting, draws=20)


# the Learn page's names of its slow results (dashboard/learn/*: slow(name, ...)) and how each is computed
# with the page's default settings; in the order of the sessions
SLOW = {
    # Weak IV and Invalid IV: robust first-stage statistics and the overidentification test (seconds each)
    **{f"robust-{errors}": (lambda errors=errors: robust.robust_inference(errors)) for errors in robust.ERRORS},
    "overid": robust.overidentification,
    "card-linear": card.linear_steps,  # Card (1995): the linear steps (about 20 s)
    "card-dml-cmr": card.dml_cmr,  # Card (1995): Fit DML-CMR on Card's data
    "orthogonality": nuisance.orthogonality,  # Orthogonal score: Run the perturbation experiment
    "compare-simple-20": _compare("simple"),  # Cross-fitting: Run the comparison, first setting
    "compare-overfit-20": _compare("overfit"),  # Cross-fitting: Run the comparison, second setting
    "crossfit-repeated": lambda: nuisance.repeated_crossfit("simple"),  # Cross-fitting: Run repeated cross-fitting
    # Ticket demand as it opens: the three fits, and the band at the sliders' strength and across strengths
    demand_key(**DEMAND_DEFAULTS): lambda: demand.demand_fits(**DEMAND_DEFAULTS, with_naive=False),
    **{band_key(**{**DEMAND_DEFAULTS, "strength": v}): (lambda v=v: demand.band_fit(**{**DEMAND_DEFAULTS, "strength": v}))
       for v in dict.fromkeys((*demand.BAND_STRENGTHS, DEMAND_DEFAULTS["strength"]))},
}
# slow buttons left to run in class on purpose: the small live version of "Orthogonality that works"
# (its point is a fresh run, whose coverage differs from the shipped one by simulation noise)
LIVE = ("pliv-live",)


def folder() -> Path:
    return Path(os.environ.get("DMLCORE_HOME", "~/.dmlcore")).expanduser() / "teaching"


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """A hash of every dmlcore source file: results computed by other code are not reused."""
    root = Path(__file__).resolve().parents[1]      # the dmlcore package
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def save(name: str, result) -> Path:
    path = folder() / f"{name}.pkl"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        pickle.dump({"fingerprint": fingerprint(), "saved": time.time(), "result": result}, f)
    tmp.replace(path)          # atomic: a reader never sees half a file
    return path


def load(name: str):
    """The prepared result ``name``, or None when there is none, it cannot be read, or other code
    computed it."""
    path = folder() / f"{name}.pkl"
    try:
        with open(path, "rb") as f:
            kept = pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None
    return kept["result"] if isinstance(kept, dict) and kept.get("fingerprint") == fingerprint() else None


def prepare(names=None, *, echo=print) -> dict[str, float]:
    """Compute and save each slow result (all of :data:`SLOW`, or ``names``); seconds per name."""
    unknown = set(names or ()) - set(SLOW)
    if unknown:
        raise DMLCoreError(f"No slow experiment named {', '.join(sorted(unknown))}; choose from {', '.join(SLOW)}.")
    seconds = {}
    for name in names or SLOW:
        start = time.perf_counter()
        path = save(name, SLOW[name]())
        seconds[name] = time.perf_counter() - start
        echo(f"{name}: {seconds[name]:.0f} s -> {path}")
    return seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Prepare the class: warm every slow Learn experiment on disk.")
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=list(SLOW), help="only these experiments")
    parser.add_argument("--list", action="store_true", help="list the experiments and whether each is prepared")
    args = parser.parse_args(argv)
    if args.list:
        for name in SLOW:
            print(f"{name}: {'prepared' if load(name) is not None else 'not prepared'}")
        return 0
    with threadpool_limits(limits=1, user_api="openmp"):   # as the page: one OpenMP thread per fit
        prepare(args.only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
