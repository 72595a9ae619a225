"""Deep feature instrumental variable regression, DFIV (Xu et al. 2021).

f(x) = w' ([psi_T(t), 1] (x) [psi_X(x), 1]): learned features of the endogenous inputs t
(psi_T, the treatment network) and of the inputs that are also conditioning variables x
(psi_X, the covariate network), combined by a tensor product with intercepts. Both stages are
ridge regressions in closed form: stage 1 (one half of the rows) regresses psi_T(t) on the
instrument network's features [phi(c), 1] with penalty lam1 * rows; stage 2 (the other half)
regresses the outcome on the predicted features with penalty lam2 * rows. Training alternates,
every epoch, ``stage1_iter`` steps of phi on the stage-1 loss, ``covariate_iter`` steps of psi_X
on the stage-2 loss (stage 1 fixed) and ``stage2_iter`` steps of psi_T through both closed forms,
full batch, Adam. Networks and settings are DFIV's demand design (its public configuration),
except the covariate network's batch norm, off by default (``covariate_norm``).
"""

from __future__ import annotations

import numpy as np
import torch

from dmlcore.estimators.peers.base import Columns, PeerEstimator, Scale, check_choice
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.estimators.peers.nets import Net, check_nn_settings, device_of, diverged, seeded, tensor
from dmlcore.learners.base import check_fraction


class DFIV(PeerEstimator):
    """Deep feature IV.

    Parameters
    ----------
    lam1 : float, default 0.1
        Stage 1's ridge penalty, times the rows of the stage.
    lam2 : float, default 0.1
        Stage 2's ridge penalty, times the rows of the stage.
    epochs : int, default 100
    stage1_iter : int, default 20
    covariate_iter : int, default 20
    stage2_iter : int, default 1
    split : float, default 0.5
        Share of the rows for stage 1.
    lr : float, default 0.001
        Adam's default, as DFIV.
    weight_decay : float, default 0.1
        For the covariate network (DFIV's); 0 for the others.
    treatment_hidden : tuple of int, default (16,)
    treatment_features : int, default 1
    instrument_hidden : tuple of int, default (128, 64)
    instrument_features : int, default 32
    covariate_hidden : tuple of int, default (128, 32)
    covariate_features : int, default 16
    covariate_norm : bool, default False
        Batch-normalise the covariate network's last hidden layer, as DFIV's demand network does.
        Off by default: chosen on validation data (the projected residual of each fit on a fresh
        draw, docs/peers.md), where the layer did worse on every seed tried.
    seed : int, default 0
    device : str, default "auto"
        ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
    """

    title = "DFIV"

    def __init__(self, lam1: float = 0.1, lam2: float = 0.1, epochs: int = 100, stage1_iter: int = 20,
                 covariate_iter: int = 20, stage2_iter: int = 1, split: float = 0.5, lr: float = 1e-3,
                 weight_decay: float = 0.1, treatment_hidden=(16,), treatment_features: int = 1,
                 instrument_hidden=(128, 64), instrument_features: int = 32, covariate_hidden=(128, 32),
                 covariate_features: int = 16, covariate_norm: bool = False, seed: int = DEFAULTS.seed, device=DEFAULTS.device):
        self.lam1 = lam1
        self.lam2 = lam2
        self.epochs = epochs
        self.stage1_iter = stage1_iter
        self.covariate_iter = covariate_iter
        self.stage2_iter = stage2_iter
        self.split = split
        self.lr = lr
        self.weight_decay = weight_decay
        self.treatment_hidden = treatment_hidden
        self.treatment_features = treatment_features
        self.instrument_hidden = instrument_hidden
        self.instrument_features = instrument_features
        self.covariate_hidden = covariate_hidden
        self.covariate_features = covariate_features
        self.covariate_norm = covariate_norm
        self.seed = seed
        self.device = device

    def _fit_peer(self, data, monitor):
        check_nn_settings(lam1=self.lam1, lam2=self.lam2, epochs=self.epochs, stage1_iter=self.stage1_iter,
                          covariate_iter=self.covariate_iter, stage2_iter=self.stage2_iter, lr=self.lr,
                          weight_decay=self.weight_decay, treatment_features=self.treatment_features,
                          instrument_features=self.instrument_features,
                          covariate_features=self.covariate_features)
        check_fraction("split", self.split, allow_zero=False, allow_one=False)
        check_choice("covariate_norm", self.covariate_norm, (True, False))
        device = device_of(self.device)
        arr = data.cmr()
        cond = set(arr.conditioning_names)
        self.t_pos_ = [j for j, c in enumerate(arr.input_names) if c not in cond]
        self.x_pos_ = [j for j, c in enumerate(arr.input_names) if c in cond]
        names = arr.input_names
        self.t_cols_ = Columns(data, [names[j] for j in self.t_pos_]).fit(arr.inputs[:, self.t_pos_])
        self.x_cols_ = Columns(data, [names[j] for j in self.x_pos_]).fit(arr.inputs[:, self.x_pos_]) if self.x_pos_ else None
        c_cols = Columns(data, arr.conditioning_names).fit(arr.conditioning)
        self.scale_ = Scale(arr.y)
        n = arr.n
        rng = np.random.default_rng([self.seed, 41])
        perm = rng.permutation(n)
        n1 = min(max(int(round(self.split * n)), 2), n - 2)
        one, two = np.sort(perm[:n1]), np.sort(perm[n1:])
        t = tensor(self.t_cols_(arr.inputs[:, self.t_pos_]), device)
        x = tensor(self.x_cols_(arr.inputs[:, self.x_pos_]), device) if self.x_cols_ else None
        c = tensor(c_cols(arr.conditioning), device)
        y = tensor(self.scale_(arr.y)[:, None], device)
        lam1, lam2 = self.lam1 * len(one), self.lam2 * len(two)

        with seeded(self.seed, device):
            t_net = Net(t.shape[1], self.treatment_hidden, self.treatment_features, image=self.t_cols_.image).to(device)
            c_net = Net(c.shape[1], self.instrument_hidden, self.instrument_features, image=c_cols.image,
                        out_norm=True).to(device)
            x_net = (Net(x.shape[1], self.covariate_hidden, self.covariate_features, image=self.x_cols_.image,
                         out_relu=True, hidden_norm=self.covariate_norm).to(device) if x is not None else None)
            t_opt = torch.optim.Adam(t_net.parameters(), lr=self.lr)
            c_opt = torch.optim.Adam(c_net.parameters(), lr=self.lr)
            x_opt = torch.optim.Adam(x_net.parameters(), lr=self.lr, weight_decay=self.weight_decay) if x_net else None
            nets = (t_net, c_net, x_net)
            monitor.stage("DFIV: alternating stage 1 / stage 2 updates", start=0.0, end=0.95)
            for epoch in range(int(self.epochs)):
                _mode(nets, c_net)
                target = t_net(t[one]).detach()
                for _ in range(int(self.stage1_iter)):
                    c_opt.zero_grad()
                    loss1 = _ridge_loss(target, _ones(c_net(c[one])), lam1)
                    loss1.backward()
                    c_opt.step()
                if x_net is not None:
                    _mode(nets, None)
                    with torch.no_grad():
                        stage1 = _ridge(t_net(t[one]), _ones(c_net(c[one])), lam1)
                        predicted = _ones(c_net(c[two])) @ stage1
                    x_net.train()
                    for _ in range(int(self.covariate_iter)):
                        x_opt.zero_grad()
                        _ridge_loss(y[two], _stage2_features(predicted, x_net(x[two])), lam2).backward()
                        x_opt.step()
                _mode(nets, t_net)
                with torch.no_grad():
                    z1, z2 = _ones(c_net(c[one])), _ones(c_net(c[two]))
                    x2 = x_net(x[two]) if x_net is not None else None
                for _ in range(int(self.stage2_iter)):
                    t_opt.zero_grad()
                    stage1 = _ridge(t_net(t[one]), z1, lam1)
                    loss2 = _ridge_loss(y[two], _stage2_features(z2 @ stage1, x2), lam2)
                    loss2.backward()
                    t_opt.step()
                l1, l2 = loss1.item() / len(one), loss2.item() / len(two)
                if not np.isfinite(l1 + l2):
                    raise diverged(self.title, epoch, f"stage losses {l1}, {l2}")
                monitor.loss("g", None, epoch, l1, of=int(self.epochs))
                monitor.loss("f", None, epoch, l2, of=int(self.epochs))

            monitor.stage("DFIV: final closed-form stages", start=0.95, end=1.0)
            _mode(nets, None)
            with torch.no_grad():
                stage1 = _ridge(t_net(t[one]), _ones(c_net(c[one])), lam1)
                feats = _stage2_features(_ones(c_net(c[two])) @ stage1, x_net(x[two]) if x_net is not None else None)
                self.weight_ = _ridge(y[two], feats, lam2)
                resid = y[two] - feats @ self.weight_
        self.nets_, self.torch_device_ = (t_net, x_net), device
        self.device_ = str(device)
        self.input_columns_ = list(arr.input_names)
        self.fold_losses_ = [{"fold": 0, "rows": int(n), "stage1_rows": int(len(one)), "stage2_rows": int(len(two)),
                              "g": monitor.histories.get(("g", None), {}),
                              "second_stage_loss": float(torch.mean(resid ** 2))}]
        self.second_stage_history_ = monitor.histories.get(("f", None), {})

    def _predict(self, x):
        t_net, x_net = self.nets_
        device = self.torch_device_
        t_net.eval()
        out = []
        with torch.no_grad():
            for i in range(0, len(x), 65_536):
                rows = x[i:i + 65_536]
                t = tensor(self.t_cols_(rows[:, self.t_pos_]), device)
                cov = None
                if x_net is not None:
                    x_net.eval()
                    cov = x_net(tensor(self.x_cols_(rows[:, self.x_pos_]), device))
                out.append((_stage2_features(t_net(t), cov) @ self.weight_).cpu().numpy())
        return self.scale_.back(np.concatenate(out).ravel()) if out else np.empty(0)


def _mode(nets, training) -> None:
    """Put ``training`` (one of ``nets``, or None) in training mode and the others in eval mode."""
    for net in nets:
        if net is not None:
            net.train(net is training)


def _ones(features: torch.Tensor) -> torch.Tensor:
    return torch.cat([features, torch.ones(len(features), 1, dtype=features.dtype, device=features.device)], 1)


def _stage2_features(treatment: torch.Tensor, covariate: torch.Tensor | None) -> torch.Tensor:
    """[treatment, 1] (x) [covariate, 1], flattened per row (just [treatment, 1] without covariates)."""
    t = _ones(treatment)
    if covariate is None:
        return t
    return (t[:, :, None] * _ones(covariate)[:, None, :]).flatten(1)


def _ridge(target: torch.Tensor, features: torch.Tensor, lam: float) -> torch.Tensor:
    """(F'F + lam I)^-1 F'T."""
    g = features.T @ features + lam * torch.eye(features.shape[1], dtype=features.dtype, device=features.device)
    return torch.linalg.solve(g, features.T @ target)


def _ridge_loss(target: torch.Tensor, features: torch.Tensor, lam: float) -> torch.Tensor:
    """|T - F W|^2 + lam |W|^2 at the ridge solution W."""
    w = _ridge(target, features, lam)
    return torch.sum((target - features @ w) ** 2) + lam * torch.sum(w ** 2)
