"""DeepGMM (Bennett, Kallus & Schnabel 2019): the adversarial generalized method of moments.

f (the primal network, on f's inputs) and u (the adversary, on the conditioning variables)
play min_f max_u  mean(u(c) e) - 1/4 mean(u(c)^2 e~^2), e = f(x) - y, where e~ is the residual
of the previous iterate (held fixed in the adversary's penalty), which makes the game's value
the optimally weighted GMM objective. Both players take simultaneous minibatch steps with
optimistic Adam (betas 0.5, 0.9; the adversary's rate 5x the primal's, as DeepGMM's code).

Which iterate to keep is chosen as in DeepGMM's code, on a validation split of the rows: every
``eval_every`` epochs the primal's validation residual and the adversary's validation outputs are
stored; an iterate's score is its worst-case moment violation against every stored adversary,
max_j [mean(u_j e_t) - 1/4 mean(u_j^2 e~^2)] with e~ the mean of the stored residuals; the
iterate with the lowest score is kept. Training stops after ``patience`` evaluations without a
better score once ``burn_in`` epochs are done.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from dmlcore.estimators.peers.base import Columns, PeerEstimator, Scale
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.estimators.peers.nets import (Net, OAdam, batches, check_nn_settings, device_of, diverged,
                                           predict_in_batches, seeded, tensor)
from dmlcore.learners.base import check_fraction, check_positive, validation_split

DIVERGED_RMS = 1e3   # a primal whose validation residuals reach this rms (standardized outcome) diverged


class DeepGMM(PeerEstimator):
    """DeepGMM with optimistic Adam and DeepGMM's validation-based choice of the iterate.

    Parameters
    ----------
    lr : float, default 2e-4
        The DML-CMR paper's rate for DeepGMM; the adversary's is 5 x lr.
    hidden : tuple of int, default (128, 64, 32)
        The DML-CMR paper's (its outcome network's).
    adversary_hidden : tuple of int, default (128, 64, 32)
    dropout : float, default 0.1
    batch_size : int, default 1024
    max_epochs : int, default 6000
        DeepGMM's code, as the next three.
    burn_in : int, default 1000
    eval_every : int, default 20
    patience : int, default 20
    val_fraction : float, default 0.2
        Rows held out to choose the iterate.
    seed : int, default 0
    device : str, default "auto"
    """

    title = "DeepGMM"

    def __init__(self, lr: float = 2e-4, hidden=(128, 64, 32), adversary_hidden=(128, 64, 32), dropout: float = 0.1,
                 batch_size: int = 1024, max_epochs: int = 6000, burn_in: int = 1000, eval_every: int = 20,
                 patience: int = 20, val_fraction: float = 0.2, seed: int = DEFAULTS.seed, device=DEFAULTS.device):
        self.lr = lr
        self.hidden = hidden
        self.adversary_hidden = adversary_hidden
        self.dropout = dropout
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.burn_in = burn_in
        self.eval_every = eval_every
        self.patience = patience
        self.val_fraction = val_fraction
        self.seed = seed
        self.device = device

    def _fit_peer(self, data, monitor):
        check_nn_settings(lr=self.lr, batch_size=self.batch_size, max_epochs=self.max_epochs,
                          eval_every=self.eval_every, patience=self.patience)
        check_positive("burn_in", self.burn_in, integer=True, allow_zero=True)
        check_fraction("val_fraction", self.val_fraction, allow_one=False)
        device = device_of(self.device)
        arr = data.cmr()
        self.x_cols_ = Columns(data, arr.input_names).fit(arr.inputs)
        c_cols = Columns(data, arr.conditioning_names).fit(arr.conditioning)
        self.scale_ = Scale(arr.y)
        rng = np.random.default_rng([self.seed, 43])
        train, val = validation_split(np.arange(arr.n), self.val_fraction, rng)
        x, c = tensor(self.x_cols_(arr.inputs), device), tensor(c_cols(arr.conditioning), device)
        y = tensor(self.scale_(arr.y), device)
        epochs = int(self.max_epochs)
        with seeded(self.seed, device):
            f = Net(x.shape[1], self.hidden, 1, dropout=self.dropout, image=self.x_cols_.image).to(device)
            u = Net(c.shape[1], self.adversary_hidden, 1, dropout=self.dropout, image=c_cols.image).to(device)
            f_opt = OAdam(f.parameters(), lr=self.lr, betas=(0.5, 0.9))
            u_opt = OAdam(u.parameters(), lr=5.0 * self.lr, betas=(0.5, 0.9))
            selector = _IterateChoice()
            monitor.stage("DeepGMM: min-max game", start=0.0, end=1.0)
            running, steps, best_score, stale = 0.0, 0, np.inf, 0
            for epoch in range(epochs):
                f.train(), u.train()
                for rows in batches(len(train), int(self.batch_size), rng):
                    idx = torch.as_tensor(train[rows], device=device)
                    e = f(x[idx]).squeeze(1) - y[idx]
                    v = u(c[idx]).squeeze(1)
                    moment = torch.mean(v.detach() * e)
                    e_fixed = e.detach()
                    adversary = -torch.mean(v * e_fixed) + 0.25 * torch.mean(v ** 2 * e_fixed ** 2)
                    f_opt.zero_grad(), u_opt.zero_grad()
                    (moment + adversary).backward()
                    f_opt.step(), u_opt.step()
                    running, steps = running + moment.item(), steps + 1
                monitor.check()
                if epoch % int(self.eval_every) and epoch != epochs - 1:
                    continue
                f.eval(), u.eval()
                with torch.no_grad():
                    e_val = f(x[val]).squeeze(1) - y[val]
                    u_val = u(c[val]).squeeze(1)
                rms = float(torch.sqrt(torch.mean(e_val ** 2)))
                if not np.isfinite(rms) or rms > DIVERGED_RMS:
                    raise diverged(self.title, epoch, f"the primal network's validation residuals reached rms "
                                                      f"{rms:.3g} (outcome standardized to sd 1)")
                score = selector.add(e_val, u_val, f.state_dict())
                monitor.loss("f", None, epoch, running / max(steps, 1), score, of=epochs)
                running, steps = 0.0, 0
                if epoch >= int(self.burn_in):
                    best_score, stale = (score, 0) if score < best_score else (best_score, stale + 1)
                    if stale >= int(self.patience):
                        break
            chosen, scores = selector.choose()
            f.load_state_dict(selector.states[chosen])
        self.f_, self.torch_device_ = f, device
        self.device_ = str(device)
        self.chosen_epoch_ = int(monitor.histories[("f", None)]["epoch"][chosen])
        self.input_columns_ = list(arr.input_names)
        self.fold_losses_ = [{"fold": 0, "rows": int(arr.n), "validation_rows": int(len(val)),
                              "chosen_epoch": self.chosen_epoch_, "second_stage_loss": float(scores[chosen])}]
        self.second_stage_history_ = monitor.histories.get(("f", None), {})
        self.notes_.append(f"DeepGMM kept the iterate of epoch {self.chosen_epoch_} (of "
                           f"{self.second_stage_history_['epoch'][-1] + 1} run), chosen on {len(val)} validation rows.")

    def _predict(self, x):
        return self.scale_.back(predict_in_batches(self.f_, self.x_cols_(x), self.torch_device_).ravel())


class _IterateChoice:
    """DeepGMM's choice of iterate: the stored primal residuals scored against every stored adversary."""

    def __init__(self):
        self.residuals, self.adversaries, self.states = [], [], []

    def add(self, e_val: torch.Tensor, u_val: torch.Tensor, state: dict) -> float:
        """Store an evaluation; return its score against the adversaries so far."""
        self.residuals.append(e_val.cpu().double())
        self.adversaries.append(u_val.cpu().double())
        self.states.append(copy.deepcopy({k: v.detach().cpu() for k, v in state.items()}))
        return float(self._scores([len(self.residuals) - 1])[0])

    def _scores(self, which) -> np.ndarray:
        e = torch.stack(self.residuals)                 # (T, n_val)
        u = torch.stack(self.adversaries)               # (J, n_val)
        e_tilde2 = torch.mean(e, dim=0) ** 2
        penalty = 0.25 * torch.mean(u ** 2 * e_tilde2, dim=1)            # (J,)
        moments = e[which] @ u.T / e.shape[1]                             # (len(which), J)
        return (moments - penalty).max(dim=1).values.numpy()

    def choose(self) -> tuple[int, np.ndarray]:
        scores = self._scores(list(range(len(self.residuals))))
        return int(np.argmin(scores)), scores
