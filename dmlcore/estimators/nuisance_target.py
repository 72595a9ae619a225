"""DML-CMR's nuisances chosen by its target: ``nuisance_choice="target"`` (a pilot; the default is ``"own"``).

``"auto"`` (:mod:`dmlcore.learners.select`) judges each nuisance by its own held-out loss: the outcome
model by its squared error, the distribution model by its energy score. DML-CMR does not need the best
distribution model by that score; it needs the pair of nuisances whose second stage f-hat best meets
E[Y - f(X) | C] = 0 (docs/error-budget.md: on demand-iv the network's wider draws gave a better f-hat than
the booster the energy score chose). This criterion judges the pair by its f-hat, on rows neither it nor
its nuisances saw, with no truth:

* the pilot's fold models (fold models 0 and 1 of each candidate, fitted on those folds' training
  rows: the fits ``auto`` scores anyway) give every row of pilot fold j out-of-fold nuisances;
* for each candidate pair (outcome model a, distribution model b) and pilot fold j, the second stage
  is fitted on fold j's rows alone (targets a_j(c), draws from b_j: a reduced budget, 1/K of the rows),
  with the run's second stage and settings;
* it is scored on the other pilot fold's rows by the projected residual there, the mean of
  r_i * E-hat_-(i)[r | C = c_i] with r = y - f-hat(x) (the held-out residual's projection,
  :func:`dmlcore.estimators.splines.cross_fitted_projection`). The score reads only y, x and c, never
  the pair's own nuisances, so a distribution model cannot flatter itself;
* the pair with the lowest mean over the two pilot folds is the choice; its nuisances are then fitted
  on every fold as ``auto`` fits its choice.

Candidates: the outcome model's ``auto`` candidates (or the named outcome model alone) times, for the
distribution model, the network (when it is a candidate) and the candidate its energy score chose (or
the named distribution model alone): at most 3 x 2 pairs, 2 second-stage fits each.

What it cannot tell: the projected residual ranks f-hats by how well they meet the restriction on the
pilot rows, not by their distance to the true f; under a weak instrument the two can disagree (the
held-out residual's caveat, docs/coverage.md). How often it picks the pair with the lowest true MSE is
measured in bench/target_choice.py (docs/error-budget.md).
"""

from __future__ import annotations

import numpy as np

from dmlcore.errors import DMLCoreError
from dmlcore.estimators.splines import cross_fitted_projection
from dmlcore.learners.select import PILOT
from dmlcore.progress import Monitor

OWN, TARGET = "own", "target"
CHOICES = (OWN, TARGET)
# how each choice chose, in the one wording of the CLI's summary line, the Results page and the dashboard's plan
CRITERIA = {OWN: "by their own held-out losses",
            TARGET: "by DML-CMR's target (held-out projected residual of the pilot f̂)"}
CRITERION_OF_ONE = {**CRITERIA, OWN: "by its own held-out loss"}     # the same, where one nuisance was chosen
NETWORK = "nn"          # the distribution-model candidate kept beside the energy score's choice
STREAM = 47             # the pilot's draws: numpy.random.default_rng([seed, STREAM, fold])


def check_choice(value) -> str:
    """``value`` when it is one of CHOICES; a DMLCoreError naming it otherwise."""
    if not isinstance(value, str) or value not in CHOICES:
        raise DMLCoreError(f"Unknown nuisance_choice {value!r}; choose 'own' (each nuisance by its own held-out "
                           f"loss, the default) or 'target' (the pair whose pilot second stage has the lowest "
                           f"held-out projected residual).")
    return value


def options(model, own_choice: str | None, role: str) -> dict:
    """{label: fitted model whose fold models 0..PILOT-1 are the pilot's} for one nuisance: a Selection's
    pilot candidates (the outcome model: all; the distribution model: the network and the energy score's
    choice), else the nuisance itself (named: fitted on every fold, its first fold models serve)."""
    scored = getattr(model, "scored_", None)
    if scored is None:
        return {"named": model}
    if role == "s":
        return dict(scored)
    keep = [name for name in scored if name == NETWORK or name == own_choice]
    return {name: scored[name] for name in keep}


def pair_losses(s_options: dict, g_options: dict, *, C, y, inputs, assemble, held, fit_f, bank,
                names, excluded, seed, should_stop=None) -> dict:
    """{(outcome label, distribution label): the mean over the PILOT folds of the projected residual, on
    the other pilot fold's rows, of f-hat fitted on pilot fold j's rows with that pair's fold-j nuisances}
    (module notes). ``fit_f(rows, targets, draws, monitor)`` fits the run's second stage on ``rows``; ``assemble(C, draws)`` f's inputs;
    ``held`` the rows of each fold; ``names`` / ``excluded`` the conditioning columns (and those not
    among f's inputs) of the projection."""
    if len(held) < PILOT:
        raise DMLCoreError(f"nuisance_choice='target' needs at least {PILOT + 1} folds; got {len(held)}.")
    out = {}
    for a, s_model in s_options.items():
        for b, g_model in g_options.items():
            scores = []
            for j in range(PILOT):
                rows, other = held[j], held[(j + 1) % PILOT]
                rng = np.random.default_rng([seed, STREAM, j])     # the same draws' randomness for every pair
                targets = s_model.predict(j, C[rows])
                draws = assemble(C[rows], g_model.sample(j, C[rows], bank, rng)).astype(np.float32)
                f = fit_f(rows, targets, draws, Monitor(should_stop=should_stop))
                r = y[other] - np.asarray(f.predict(inputs[other]), dtype=float).ravel()
                g = cross_fitted_projection(C[other], r, names, excluded, seed,
                                            what="The target choice of nuisances")
                scores.append(float(np.mean(r * g)))
            out[(a, b)] = float(np.mean(scores))
    return out


def record(losses: dict, choice: tuple, role: str, scale: float) -> dict:
    """The keys a Selection's ``selection_`` gains when the target chose (the run record's
    ``nuisances[role]``): ``criterion``, ``target_loss`` ({"outcome|distribution": projected residual /
    Var(Y)}), ``target_pair``."""
    return {"criterion": TARGET,
            "target_loss": {f"{a}|{b}": v / scale for (a, b), v in losses.items()},
            "target_pair": f"{choice[0]}|{choice[1]}",
            "target_what": (f"projected residual / Var(Y) of f-hat fitted on one pilot fold's rows with the pair's "
                            f"out-of-fold nuisances, on the other pilot fold's rows; mean over {PILOT} pilot folds, "
                            f"lower is better ({role}: the {'first' if role == 's' else 'second'} of the pair)")}
