"""Second stage: fit f by minimising a score over precomputed nuisance values.

Every row i carries a target t_i (s_k(c_i) for the orthogonal score of DML-CMR and
CE-DML-CMR, y_i for the naive plug-in) and a bank of draws x_ij of f's inputs from the
fitted conditional distribution. g(f, c_i) = E[f(X) | c_i] is estimated by the mean of f
over draws, and every model below minimises

    L(f) = mean_i (t_i - mean_j f(x_ij))^2.

Averaging M draws leaves Var(f(X) | c) / M of the conditional variance in the loss (one draw,
as in the authors' code, leaves all of it); ``n_draws`` sets M.

* :class:`NeuralF` -- an MLP trained by mini-batch AdamW; each step uses M draws picked at
  random from the bank; early stopping on the score of held-out rows.
* :class:`BoostedF` -- gradient boosting *of the score* (for tree learners): each stage fits a
  regression tree to the negative gradient of L at the draws (which is t_i - g_i for every
  draw of row i), then takes the step that minimises L along that tree; early stopping on
  held-out rows.
* :class:`LinearF` -- f linear in its inputs: L is least squares of t on mean_j x_ij.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.tree import DecisionTreeRegressor

from dmlcore.learners.base import Scaler, check_positive, validation_split
from dmlcore.learners.nn import make_network

NN_DEFAULTS = dict(hidden=(128, 64, 32), dropout=0.0, lr=2e-3, weight_decay=1e-3, batch_size=256,
                   max_epochs=150, patience=12, val_fraction=0.1, clip=5.0)
BOOST_DEFAULTS = dict(learning_rate=0.1, max_stages=400, max_depth=4, min_samples_leaf=20,
                      subsample=0.5, patience=25, val_fraction=0.1)


class SecondStage:
    """Common interface: ``fit(targets, draws, inputs, monitor)`` then ``predict(X)``."""

    def __init__(self, params: dict | None = None, n_draws: int = 8, seed: int = 0, image=None):
        self.params = params
        self.n_draws = n_draws
        self.seed = seed
        self.image = image

    def score_per_row(self, targets: np.ndarray, draws: np.ndarray) -> np.ndarray:
        """(t_i - mean_j f(x_ij))^2 for each row, on the scale of the targets."""
        n, m, d = draws.shape
        g = self.predict(draws.reshape(n * m, d)).reshape(n, m).mean(1)
        return (targets - g) ** 2


class NeuralF(SecondStage):
    def fit(self, targets, draws, inputs, monitor):
        p = {**NN_DEFAULTS, **(self.params or {})}
        for key in ("lr", "batch_size", "max_epochs"):
            check_positive(key, p[key], integer=key != "lr")
        check_positive("n_draws", self.n_draws, integer=True)
        rng = np.random.default_rng(self.seed + 2)
        torch.manual_seed(self.seed + 2)
        gen = torch.Generator().manual_seed(self.seed + 2)
        self.x_scale_ = Scaler(inputs)
        if self.image is not None:  # pixels stay raw
            self.x_scale_.mean[self.image[0]] = 0.0
            self.x_scale_.std[self.image[0]] = 1.0
        self.t_scale_ = Scaler(targets)
        n, bank, d = draws.shape
        X = torch.as_tensor(self.x_scale_.transform(draws), dtype=torch.float32)
        T = torch.as_tensor(self.t_scale_.transform(targets), dtype=torch.float32)
        fit_rows, val_rows = validation_split(np.arange(n), p["val_fraction"], rng)
        model = make_network(1, d, p, 1, gen, self.image)
        shared = {"shared_images": min(int(self.n_draws), bank)} if self.image is not None else {}
        opt = torch.optim.AdamW(model.parameters(), lr=p["lr"], weight_decay=p["weight_decay"])
        m = min(int(self.n_draws), bank)
        bs = int(p["batch_size"])
        steps = max(1, math.ceil(len(fit_rows) / bs))
        x_val, t_val = X[val_rows].reshape(1, -1, d), T[val_rows]
        best, best_state, waited = 1e30, None, 0
        for epoch in range(int(p["max_epochs"])):
            model.train()
            order = rng.permutation(fit_rows)
            total = 0.0
            for step in range(steps):
                rows = order[step * bs:(step + 1) * bs]
                pick = rng.choice(bank, size=m, replace=False) if m < bank else slice(None)
                xb = X[rows][:, pick].reshape(1, -1, d)
                g = model(xb, **shared).reshape(len(rows), -1).mean(1)
                loss = (T[rows] - g).pow(2).mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), p["clip"])
                opt.step()
                total += float(loss.detach())
            model.eval()
            with torch.no_grad():
                val = float((t_val - model(x_val).reshape(len(val_rows), -1).mean(1)).pow(2).mean())
            monitor.loss("f", None, epoch, total / steps, val, of=int(p["max_epochs"]))
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

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        with torch.no_grad():
            x = torch.as_tensor(self.x_scale_.transform(X), dtype=torch.float32).reshape(1, -1, X.shape[-1])
            out = self.model_(x).reshape(-1).numpy().astype(float)
        return self.t_scale_.inverse(out)


class BoostedF(SecondStage):
    def fit(self, targets, draws, inputs, monitor):
        p = {**BOOST_DEFAULTS, **(self.params or {})}
        for key in ("learning_rate", "max_stages", "max_depth", "min_samples_leaf"):
            check_positive(key, p[key], integer=key != "learning_rate")
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


SECOND_STAGES = {"nn": NeuralF, "boost": BoostedF, "linear": LinearF}
