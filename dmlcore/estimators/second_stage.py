"""Second stage: fit f by minimising a score over precomputed nuisance values.

Every row i carries a target t_i (s_k(c_i) for the orthogonal score of DML-CMR and
CE-DML-CMR, y_i for the naive plug-in) and a bank of draws x_ij of f's inputs from the
fitted conditional distribution. g(f, c_i) = E[f(X) | c_i] is estimated by the mean of f
over draws, and every model below minimises

    L(f) = mean_i (t_i - mean_j f(x_ij))^2.

Averaging M draws leaves Var(f(X) | c) / M of the conditional variance in the loss (one draw,
as in the authors' code, leaves all of it); ``n_draws`` sets M.

* :class:`NeuralF` -- an MLP trained by mini-batch AdamW; each step uses M draws picked at
  random from the bank; early stopping on the score of held-out rows. It and its draws live
  on the torch device ``device`` (copied there once per fit).
* :class:`BoostedF` -- gradient boosting *of the score* (for tree learners): each stage fits a
  regression tree to the negative gradient of L at the draws (which is t_i - g_i for every
  draw of row i), then takes the step that minimises L along that tree; early stopping on
  held-out rows.
* :class:`LinearF` -- f linear in its inputs: L is least squares of t on mean_j x_ij.
* :class:`SieveF` -- f linear in a sieve basis B (paper Assumption 3.1): L plus a P-spline
  penalty is least squares of t on mean_j B(x_ij), solved in closed form, with sandwich
  variances that give pointwise confidence bands (``predict_interval``).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.sparse import csr_matrix
from scipy.stats import norm
from sklearn.tree import DecisionTreeRegressor
from threadpoolctl import threadpool_limits

from dmlcore.errors import DMLCoreError
from dmlcore.estimators.splines import (RIDGE_GRID, Cells, TensorBasis, additive_basis, is_categorical, spd_solve,
                                        usable_tensor)
from dmlcore.learners.base import (Scaler, check_fraction, check_hidden, check_positive, merge_params,
                                   validation_split)
from dmlcore.learners.nn import adamw, make_network
from dmlcore.stats.resample import SEED

NN_DEFAULTS = dict(hidden=(128, 64, 32), dropout=0.0, lr=2e-3, weight_decay=1e-3, batch_size=256,
                   max_epochs=150, patience=12, val_fraction=0.1, clip=5.0)
BOOST_DEFAULTS = dict(learning_rate=0.1, max_stages=400, max_depth=4, min_samples_leaf=20,
                      subsample=0.5, patience=25, val_fraction=0.1)
SIEVE_DEFAULTS = dict(n_knots=None, ridge=None, variance="outcome", max_features=600,
                      max_levels=10, val_folds=5, interact=(), covariates="linear")
MAX_KNOTS = 20          # the knot rule's largest number of interior knots per continuous input
ROWS_PER_FEATURE = 1    # the knot rule's fewest rows of the smallest cell per basis function
VARIANCES = ("outcome", "structural", "score")
CHUNK = 2 ** 21         # basis values computed at once (16 MB)


class SecondStage:
    """Common interface: ``fit(targets, draws, inputs, monitor)`` then ``predict(X)``.

    A second stage with ``has_bands`` also takes ``outcome`` (y) and ``names`` (of the inputs)
    in ``fit`` and has ``predict_interval``. ``device`` is the torch device of a network f
    (the others run on the CPU).
    """

    has_bands = False
    notes_: tuple = ()      # what a run record's notes say of this second stage's fit (SieveF: an additive basis)
    # the scale of the losses it reports per epoch or stage (the run record's second_stage_history):
    # "standardized" targets, or the "outcome"'s own units squared
    loss_scale = "standardized"

    def __init__(self, params: dict | None, n_draws: int, seed: int = SEED, image=None,
                 device: torch.device | str = "cpu"):
        self.params = params
        self.n_draws = n_draws
        self.seed = seed
        self.image = image
        self.device = device

    def score_per_row(self, targets: np.ndarray, draws: np.ndarray) -> np.ndarray:
        """(t_i - mean_j f(x_ij))^2 for each row, on the scale of the targets."""
        n, m, d = draws.shape
        g = self.predict(draws.reshape(n * m, d)).reshape(n, m).mean(1)
        return (targets - g) ** 2


class NeuralF(SecondStage):
    def fit(self, targets, draws, inputs, monitor):
        p = merge_params(self.params, NN_DEFAULTS, "nn second-stage")
        for key in ("lr", "batch_size", "max_epochs", "clip"):
            check_positive(key, p[key], integer=key in ("batch_size", "max_epochs"))
        check_positive("weight_decay", p["weight_decay"], allow_zero=True)
        check_positive("patience", p["patience"], integer=True, allow_zero=True)
        check_fraction("dropout", p["dropout"], allow_zero=True, allow_one=False)
        check_fraction("val_fraction", p["val_fraction"], allow_one=False)
        check_hidden(p["hidden"])
        check_positive("n_draws", self.n_draws, integer=True)
        rng = np.random.default_rng(self.seed + 2)
        gen = torch.Generator().manual_seed(self.seed + 2)
        self.x_scale_ = Scaler(inputs)
        if self.image is not None:  # pixels stay raw
            self.x_scale_.mean[self.image[0]] = 0.0
            self.x_scale_.std[self.image[0]] = 1.0
        self.t_scale_ = Scaler(targets)
        n, bank, d = draws.shape
        device = torch.device(self.device)
        mean, std = self.x_scale_.mean.astype(np.float32), self.x_scale_.std.astype(np.float32)
        X = torch.from_numpy((np.asarray(draws, dtype=np.float32) - mean) / std).to(device)
        T = torch.as_tensor(self.t_scale_.transform(targets), dtype=torch.float32).to(device)
        fit_rows, val_rows = validation_split(np.arange(n), p["val_fraction"], rng)
        model = make_network(1, d, p, 1, gen, self.image, device=device)
        shared = {"shared_images": min(int(self.n_draws), bank)} if self.image is not None else {}
        opt = adamw(model.parameters(), p, device)
        m = min(int(self.n_draws), bank)
        bs = int(p["batch_size"])
        steps = max(1, math.ceil(len(fit_rows) / bs))
        x_val, t_val = X[val_rows].reshape(1, -1, d), T[val_rows]
        best, best_state, waited = 1e30, None, 0
        for epoch in range(int(p["max_epochs"])):
            model.train()
            # the epoch's row order and each step's draws, drawn in that order, moved to the device at once
            order = torch.as_tensor(rng.permutation(fit_rows)).to(device)
            picks = (torch.as_tensor(np.stack([rng.choice(bank, size=m, replace=False) for _ in range(steps)]))
                     .to(device) if m < bank else None)
            total = torch.zeros((), dtype=torch.float64, device=device)
            for step in range(steps):
                rows = order[step * bs:(step + 1) * bs]
                xb = (X[rows] if picks is None else X[rows][:, picks[step]]).reshape(1, -1, d)
                g = model(xb, **shared).reshape(len(rows), -1).mean(1)
                loss = (T[rows] - g).pow(2).mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), p["clip"])
                opt.step()
                total += loss.detach()
            model.eval()
            with torch.no_grad():
                val = float((t_val - model(x_val).reshape(len(val_rows), -1).mean(1)).pow(2).mean())
            monitor.loss("f", None, epoch, float(total) / steps, val, of=int(p["max_epochs"]))
            if val < best - 1e-6 * max(1.0, abs(best)):
                best, waited = val, 0
                best_state = [t.detach().clone() for t in model.parameters()]
            else:
                waited += 1
                if waited > p["patience"]:
                    break
            monitor.check()
        with torch.no_grad():
            for saved, t in zip(best_state, model.parameters()):
                t.copy_(saved)
        self.model_ = model
        return self

    def to(self, device) -> "NeuralF":
        """Move the fitted network to ``device``."""
        self.model_.to(device)
        return self

    def predict(self, X):
        X = np.asarray(X)
        if X.dtype != np.float32:                 # float32 (image frames) travels as it is
            X = np.asarray(X, dtype=float)
        device = next(self.model_.parameters()).device
        with torch.no_grad():
            # standardized in float64 on the device, then rounded: the CPU's numbers as before
            x = torch.tensor(X, device=device).double()
            # copies: arrays unpickled from another process (Ray) may be read-only
            x = ((x - torch.tensor(self.x_scale_.mean, device=device))
                 / torch.tensor(self.x_scale_.std, device=device)).float()
            out = self.model_(x.reshape(1, -1, X.shape[-1])).reshape(-1).cpu().numpy().astype(float)
        return self.t_scale_.inverse(out)


class BoostedF(SecondStage):
    loss_scale = "outcome"      # its stages' squared errors are on the targets' own scale

    def fit(self, targets, draws, inputs, monitor):
        p = merge_params(self.params, BOOST_DEFAULTS, "boosted second-stage")
        for key in ("learning_rate", "max_stages", "max_depth", "min_samples_leaf"):
            check_positive(key, p[key], integer=key != "learning_rate")
        check_positive("patience", p["patience"], integer=True, allow_zero=True)
        check_fraction("subsample", p["subsample"])
        check_fraction("val_fraction", p["val_fraction"], allow_one=False)
        rng = np.random.default_rng(self.seed + 2)
        n, bank, d = draws.shape
        m = min(int(self.n_draws), bank)
        draws = draws[:, :m]
        fit_rows, val_rows = validation_split(np.arange(n), p["val_fraction"], rng)
        self.init_ = float(np.mean(targets[fit_rows]))
        F = np.full((n, m), self.init_)
        trees, steps = [], []
        best, best_len, waited = 1e30, 0, 0
        for stage in range(int(p["max_stages"])):
            resid = targets - F.mean(1)
            rows = fit_rows if p["subsample"] >= 1 else rng.choice(
                fit_rows, size=max(2, int(p["subsample"] * len(fit_rows))), replace=False)
            tree = DecisionTreeRegressor(max_depth=int(p["max_depth"]), min_samples_leaf=int(p["min_samples_leaf"]),
                                         random_state=int(rng.integers(2**31)))
            tree.fit(draws[rows].reshape(-1, d), np.repeat(resid[rows], m))
            H = tree.predict(draws.reshape(-1, d)).reshape(n, m)
            hbar = H.mean(1)
            denom = float(hbar[fit_rows] @ hbar[fit_rows])
            gamma = float(resid[fit_rows] @ hbar[fit_rows]) / denom if denom > 0 else 0.0
            F += p["learning_rate"] * gamma * H
            trees.append(tree)
            steps.append(p["learning_rate"] * gamma)
            g = F.mean(1)
            train = float(np.mean((targets[fit_rows] - g[fit_rows]) ** 2))
            val = float(np.mean((targets[val_rows] - g[val_rows]) ** 2))
            monitor.loss("f", None, stage, train, val, of=int(p["max_stages"]))
            if val < best - 1e-9:
                best, best_len, waited = val, len(trees), 0
            else:
                waited += 1
                if waited > p["patience"]:
                    break
            monitor.check()
        self.trees_, self.steps_ = trees[:best_len], steps[:best_len]
        return self

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        out = np.full(len(X), self.init_)
        for tree, step in zip(self.trees_, self.steps_):
            out += step * tree.predict(X)
        return out


class LinearF(SecondStage):
    def fit(self, targets, draws, inputs, monitor):
        merge_params(self.params, {}, "linear second-stage")
        xbar = draws.mean(1)
        design = np.column_stack([np.ones(len(xbar)), xbar])
        ridge = 1e-8 * np.eye(design.shape[1])
        ridge[0, 0] = 0.0
        self.coef_ = np.linalg.solve(design.T @ design + ridge * len(xbar), design.T @ targets)
        loss = float(np.mean((targets - design @ self.coef_) ** 2))
        monitor.loss("f", None, 0, loss, None, of=1)
        return self

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        return self.coef_[0] + X @ self.coef_[1:]


class SieveF(SecondStage):
    """f(x) = B(x)'theta with the spline sieve of :class:`~dmlcore.estimators.sieve.Sieve2SLS`.

    Basis: each input gets cubic B-splines on quantile knots or, with at most ``max_levels``
    integer values, level indicators; knots and levels come from the observed inputs and the
    draws together (values outside their range are clipped to it). Categorical inputs known
    given C (equal to the row's own value in every draw, such as a covariate) split the rows
    into cells with coefficients of their own -- the tensor product with their indicators,
    solved cell by cell. theta-hat minimises, in closed form,

        mean_i (t_i - theta'Bbar_i)^2 + ridge * theta' Omega theta,   Bbar_i = mean_j B(x_ij),

    over the whole bank of draws, Omega the P-spline penalty of Sieve2SLS (squared second
    differences along each spline input, so functions linear in each input are not shrunk):
    theta = A^-1 sum_i Bbar_i t_i with A = sum_i Bbar_i Bbar_i' + n ridge Omega.

    Knot rule (``n_knots`` None): the most interior knots per continuous input, at most
    MAX_KNOTS, for which a cell's basis has at most min(max_features, m / ROWS_PER_FEATURE)
    functions, m the rows of the smallest cell -- many knots, the penalty doing the smoothing.
    The treatment (the first input) and the inputs drawn given C keep splines whenever they
    take more than two values, and the treatment never splits cells.

    Additive basis: when that tensor product keeps fewer than MIN_TENSOR_KNOTS interior knots
    (many covariates, or small cells), f is instead a penalised spline in the treatment and the
    drawn inputs plus a linear (``covariates="linear"``) or unpenalised spline (``"spline"``)
    term or categories per other input, without cells (:func:`~dmlcore.estimators.sieve.
    additive_basis`); ``interact`` names inputs whose term is also multiplied by the
    treatment's. ``notes_`` then says so.
    ``ridge`` None: the RIDGE_GRID value with the smallest held-out score (t_i - theta'Bbar_i)^2
    over ``val_folds`` random folds of this stage's rows (no other data).

    Variance: V = A^-1 (sum_i r_i^2 Bbar_i Bbar_i') A^-1 for three per-row residuals r_i
    (all computed; ``variance`` names the default of ``predict_interval``). Without penalty,
    exactly theta-hat - theta_0 = A^-1 sum_i Bbar_i [(s-hat - s_0)(c_i) - (g-hat - g_0)(f_0, c_i)]
    at the truth theta_0: the nuisance errors enter to first order, because the gradient of
    the score is linear in (s, g) -- the score is orthogonal in its value, not in its gradient.

    * ``"score"``: r_i = t_i - theta'Bbar_i -- the plug-in of the paper's Theorem 3.4,
      J^-1 E[psi psi'] J^-1 with psi the gradient of the score; it treats s and g as known. At
      the truth s_0(c) = g_0(f_0, c) for every c, so psi is identically zero: the theorem's
      variance is degenerate and its plug-in measures only the nuisances' misfit.
    * ``"outcome"`` (default): r_i = y_i - theta'Bbar_i. For a cross-fitted regression s-hat
      with small bias in the direction b(c) = E[B(X) | c], sum_i b(c_i)(s-hat - s_0)(c_i) ~
      sum_i b(c_i)(y_i - s_0(c_i)); this r_i adds that term and leaves out g-hat's.
    * ``"structural"``: r_i^2 = (y_i - theta'B(x_i))^2 + var_j(theta'B(x_ij)) / M. If g-hat
      also behaves like that regression, of f_0(X) on C, it adds -(f_0(x_i) - g_0(f_0, c_i)),
      and row i's influence is A^-1 b(c_i)(y_i - f_0(x_i)) -- the IV sandwich with instruments
      Bbar -- plus the Monte-Carlo error of the M draws (second term).

    The g-hat term cancels much of the s-hat term only when both nuisances smooth alike: in
    simulations (docs/coverage.md) ``"structural"`` matched f-hat's spread with linear
    nuisances and was too narrow with gradient boosting, where ``"outcome"`` matched it; the
    theorem's ``"score"`` was too narrow everywhere. All treat the knots and penalty as fixed
    and none sees the nuisances' regularisation bias, which enters theta-hat to first order
    too: a band covers f only where that bias and the sieve's are small against its width.

    Attributes: ``theta_`` and ``cov_`` ({cell: coefficients}, {variance: {cell: covariance}}),
    ``basis_``, ``cells_``, ``free_inputs_``, ``n_knots_``, ``ridge_``, ``variance_``, ``cv_loss_``
    ({ridge: held-out score}; empty when ``ridge`` was given), ``additive_``, ``notes_``.
    """

    has_bands = True

    def fit(self, targets, draws, inputs, monitor, *, outcome, names):
        with threadpool_limits(limits=1, user_api="blas"):  # many small solves (see Sieve2SLS.fit)
            return self._fit(targets, draws, inputs, monitor, np.asarray(outcome, dtype=float), list(names))

    def _fit(self, targets, draws, inputs, monitor, outcome, names):
        p = merge_params(self.params, SIEVE_DEFAULTS, "sieve second-stage")
        if p["variance"] not in VARIANCES:
            raise DMLCoreError(f"variance must be one of {', '.join(VARIANCES)}; got {p['variance']!r}.")
        for key in ("max_features", "max_levels", "val_folds"):
            check_positive(key, p[key], integer=True)
        if p["n_knots"] is not None:
            check_positive("n_knots", p["n_knots"], integer=True, allow_zero=True)
        if p["ridge"] is not None:
            check_positive("ridge", p["ridge"])
        if p["covariates"] not in ("linear", "spline"):
            raise DMLCoreError(f"covariates must be 'linear' or 'spline'; got {p['covariates']!r}.")
        unknown = [c for c in p["interact"] if c not in names[1:]]
        if unknown:
            raise DMLCoreError(f"interact names inputs of f to interact with '{names[0]}'; "
                               f"'{unknown[0]}' is not one (inputs: {', '.join(names)}).")
        n, bank, d = draws.shape
        k, levels = MAX_KNOTS if p["n_knots"] is None else int(p["n_knots"]), int(p["max_levels"])
        fixed = [bool(np.all(draws[:, :, j] == inputs[:, j, None].astype(draws.dtype))) for j in range(d)]
        smooth = {names[0]} | {names[j] for j in range(d) if not fixed[j]}
        known = [j for j in range(d) if fixed[j] and is_categorical(np.unique(inputs[:, j]), levels)
                 and 1 < len(np.unique(inputs[:, j])) and not (names[j] in smooth and len(np.unique(inputs[:, j])) > 2)]
        self.cells_ = Cells([(j, names[j]) for j in known], [np.unique(inputs[:, j]) for j in known])
        self.free_inputs_ = [j for j in range(d) if j not in known]
        cell = self.cells_.codes(inputs)
        codes, sizes = np.unique(cell, return_counts=True)
        cap = max(1, min(int(p["max_features"]), int(sizes.min()) // ROWS_PER_FEATURE))
        every = np.vstack([inputs, draws.reshape(-1, d)])
        basis = TensorBasis.build(every[:, self.free_inputs_], [names[j] for j in self.free_inputs_], k,
                                   levels, cap, smooth)
        self.additive_ = not usable_tensor(basis, k)
        self.notes_ = []
        if self.additive_:  # too many functions for the rows (many covariates): additive, no cells
            self.cells_, self.free_inputs_ = Cells([], []), list(range(d))
            cell, codes, sizes = np.zeros(n, dtype=int), np.zeros(1, dtype=int), np.array([n])
            cap = max(1, min(int(p["max_features"]), n // ROWS_PER_FEATURE))
            basis = additive_basis(every, names, k, levels, cap, smooth=smooth,
                                   products=[(0, names.index(c)) for c in p["interact"]],
                                   spline_others=p["covariates"] == "spline")
            if basis is None:
                raise DMLCoreError(f"The spline second stage needs more rows than basis functions, and its "
                                   f"simplest basis (a line or categories per input) has more functions than "
                                   f"the {n:,} rows. Give f fewer inputs (covariates) on the Roles page, or "
                                   f"use more rows.")
            self.notes_.append(f"The spline second stage used an additive basis ({basis.describe()}): a full "
                               f"tensor product of the {d} inputs has too many functions for {n:,} rows. "
                               f"Its bands and intervals hold for f of that form.")
        self.basis_, self.n_knots_ = basis, basis.n_knots
        omega = basis.penalty()
        folds = np.random.default_rng(self.seed + 2).permutation(n) % min(int(p["val_folds"]), n)
        held = np.bincount(folds)
        parts = {c: [self._gram(draws[rows], targets[rows])
                     for rows in (np.flatnonzero((cell == c) & (folds == k)) for k in range(len(held)))]
                 for c in codes}
        totals = {c: [sum(part[i] for part in parts[c]) for i in range(3)] for c in codes}
        self.cv_loss_ = {}
        if p["ridge"] is None and len(held) > 1:
            for ridge in RIDGE_GRID:
                loss = 0.0
                for c in codes:
                    gram, cross, _ = totals[c]
                    for (g_k, c_k, sq_k), m in zip(parts[c], held):
                        theta = spd_solve(gram - g_k + (n - m) * ridge * omega, cross - c_k)
                        loss += sq_k - 2 * theta @ c_k + theta @ g_k @ theta
                self.cv_loss_[ridge] = float(loss / n)
                monitor.check()
            self.ridge_ = min(self.cv_loss_, key=self.cv_loss_.get)
        else:
            self.ridge_ = float(p["ridge"] if p["ridge"] is not None else RIDGE_GRID[0])
        self.theta_, a_inv, train = {}, {}, 0.0
        for c in codes:
            gram, cross, sq = totals[c]
            a_inv[c] = spd_solve(gram + n * self.ridge_ * omega, np.eye(basis.size))
            self.theta_[c] = a_inv[c] @ cross
            train += sq - 2 * self.theta_[c] @ cross + self.theta_[c] @ gram @ self.theta_[c]
        monitor.loss("f", None, 0, float(train / n), self.cv_loss_.get(self.ridge_), of=1)
        self.cov_ = {name: {} for name in VARIANCES}
        for c in codes:
            rows = np.flatnonzero(cell == c)
            meats = self._meats(self.theta_[c], targets[rows], draws[rows], inputs[rows], outcome[rows])
            for name, meat in meats.items():
                self.cov_[name][c] = a_inv[c] @ meat @ a_inv[c]
        self.variance_ = p["variance"]
        return self

    def _chunks(self, rows, per_row):
        step = max(1, CHUNK // (per_row * self.basis_.size))
        return [slice(i, i + step) for i in range(0, rows, step)]

    def _basis(self, x):
        return self.basis_(x[..., self.free_inputs_].reshape(-1, len(self.free_inputs_)))

    def _gram(self, draws, targets):
        """sum Bbar Bbar', sum Bbar t and sum t^2 over the rows given (one cell's)."""
        size = self.basis_.size
        gram, cross = np.zeros((size, size)), np.zeros(size)
        bank = draws.shape[1]
        for rows in self._chunks(len(draws), bank):
            bbar = self._basis(draws[rows]).reshape(-1, bank, size).mean(1)
            gram += bbar.T @ bbar
            cross += bbar.T @ targets[rows]
        return gram, cross, float(targets @ targets)

    def _meats(self, theta, targets, draws, inputs, outcome):
        """{variance: sum_i r_i^2 Bbar_i Bbar_i'} over one cell's rows (class notes)."""
        size = self.basis_.size
        meats = {name: np.zeros((size, size)) for name in VARIANCES}
        bank = draws.shape[1]
        for rows in self._chunks(len(draws), bank):
            b = self._basis(draws[rows]).reshape(-1, bank, size)
            bbar = b.mean(1)
            f_draws = b @ theta
            fbar = f_draws.mean(1)
            mc = f_draws.var(1, ddof=1) / bank if bank > 1 else 0.0
            squares = {"score": (targets[rows] - fbar) ** 2, "outcome": (outcome[rows] - fbar) ** 2,
                       "structural": (outcome[rows] - self._basis(inputs[rows]) @ theta) ** 2 + mc}
            for name, r2 in squares.items():
                meats[name] += (bbar * r2[:, None]).T @ bbar
        return meats

    def _cells_of(self, X):
        """{cell: row positions} for the rows of X; a DMLCoreError for cells never seen in fit."""
        cell = self.cells_.fitted_codes(X, self.theta_)
        return {c: np.flatnonzero(cell == c) for c in np.unique(cell)}

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        out = np.empty(len(X))
        for c, rows in self._cells_of(X).items():
            for part in self._chunks(len(rows), 1):
                out[rows[part]] = self._basis(X[rows[part]]) @ self.theta_[c]
        return out

    def linear_functional(self, X, weights, variance=None):
        """(estimate, standard error) of ``sum_k weights[k] * f(X[k])``: ``d'theta`` and
        ``sqrt(d' V d)`` summed over cells (independent), ``d = sum_k weights[k] B(X[k])``."""
        name = self.variance_ if variance is None else variance
        if name not in self.cov_:
            raise DMLCoreError(f"variance must be one of {', '.join(VARIANCES)}; got {name!r}.")
        X, w = np.asarray(X, dtype=float), np.asarray(weights, dtype=float)
        if w.shape != (len(X),):
            raise DMLCoreError(f"weights needs one number per row of X ({len(X)}); got shape {w.shape}.")
        estimate = variance_sum = 0.0
        for c, rows in self._cells_of(X).items():
            d = sum(w[rows[part]] @ self._basis(X[rows[part]]) for part in self._chunks(len(rows), 1))
            estimate += d @ self.theta_[c]
            variance_sum += d @ self.cov_[name][c] @ d
        return float(estimate), float(np.sqrt(variance_sum))

    def predict_interval(self, X, level=0.95, variance=None, groups=None):
        """Normal bands ``B'theta -/+ q * sqrt(B' V B)`` at the rows of X, as (lower, upper).

        With ``groups`` (a label per row), the band of each group's mean of f, in the order of
        ``np.unique(groups)``: B is the group's mean basis vector, the rows held fixed (e.g.
        E[Y | do(a)] = mean_i h(a, w_i) in proximal learning).
        """
        if not 0 < level < 1:
            raise DMLCoreError(f"level must be strictly between 0 and 1; got {level!r}.")
        name = self.variance_ if variance is None else variance
        if name not in self.cov_:
            raise DMLCoreError(f"variance must be one of {', '.join(VARIANCES)}; got {name!r}.")
        X = np.asarray(X, dtype=float)
        if groups is None:
            center, var = np.empty(len(X)), np.empty(len(X))
            for c, rows in self._cells_of(X).items():
                for part in self._chunks(len(rows), 1):
                    b = self._basis(X[rows[part]])
                    center[rows[part]] = b @ self.theta_[c]
                    var[rows[part]] = np.einsum("ij,jk,ik->i", b, self.cov_[name][c], b)
        else:
            if len(groups) != len(X):
                raise DMLCoreError(f"groups needs one label per row of X ({len(X)}); got {len(groups)}.")
            code = np.unique(np.asarray(groups), return_inverse=True)[1].ravel()
            counts = np.bincount(code)
            center, var = np.zeros(len(counts)), np.zeros(len(counts))
            for c, rows in self._cells_of(X).items():  # cells have independent coefficients
                mean_b = np.zeros((len(counts), self.basis_.size))
                for part in self._chunks(len(rows), 1):
                    b = self._basis(X[rows[part]])
                    member = csr_matrix((np.ones(len(b)), (code[rows[part]], np.arange(len(b)))),
                                        shape=(len(counts), len(b)))
                    mean_b += member @ b / counts[:, None]
                center += mean_b @ self.theta_[c]
                var += np.einsum("ij,jk,ik->i", mean_b, self.cov_[name][c], mean_b)
        q = norm.ppf(0.5 + level / 2)
        return center - q * np.sqrt(var), center + q * np.sqrt(var)


SECOND_STAGES = {"nn": NeuralF, "boost": BoostedF, "linear": LinearF, "sieve": SieveF}
