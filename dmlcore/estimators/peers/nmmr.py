"""Neural maximum moment restriction, NMMR (Kompa et al. 2022), for proximal causal learning.

A network h(a, w, x) (the outcome bridge) minimises the kernel maximum moment restriction
risk of E[Y - h(A, W, X) | A, Z, X] = 0 over minibatches: with r_i = y_i - h_i and k a Gaussian
kernel (length scale 1) on the conditioning variables (a, z, x),

* U-statistic (``loss="U"``, NMMR-U, the default): sum_(i != j) r_i k_ij r_j / (n (n - 1));
* V-statistic (``loss="V"``, NMMR-V): sum_(i, j) r_i k_ij r_j / n^2.

Settings are those stored with the DML-CMR authors' NMMR results, the run behind the
paper's PCL numbers (``pcl/plot_results/nmmru_*/configs.json`` and ``nmmrv_*``): Adam,
learning rate 0.001, L2 penalty 3e-6, batch 1000, 3000 epochs, width 80, depth 3, the network
and the kernel on the raw columns and outcome, the last epoch kept. (NMMR's own repository
configures learning rate 0.003 and depth 4 for the U-statistic.) Named options restore what
this module did before it followed that code (docs/peers.md): ``lr=0.003``, ``epochs=1000``,
``depth=4`` for U, ``scale="standardized"`` and ``kernel_scale="standardized"`` (columns and outcome standardized),
``val_fraction`` > 0 (keep the epoch with the lowest V-statistic risk on a validation split; the
V-statistic, unlike the U-statistic, cannot go below 0, so an over-fitted network cannot win the
choice by driving it negative), ``out_relu=True`` (the code's network also passes its output
through a ReLU, though its comment says the last layer is exempt; that clips negative outcomes,
so it is off by default). Raw columns suit data whose columns have similar scales, as the demand
design's; standardize others. Image pixels go through the project's CNN extractor; in the kernel
they are multiplied by 0.05, as the NMMR code does for dSprites.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from dmlcore.estimators.peers.base import Columns, PeerEstimator, Scale, check_choice
from dmlcore.estimators.settings import DEFAULTS
from dmlcore.estimators.peers.nets import (Net, batches, check_nn_settings, device_of, diverged,
                                           predict_in_batches, seeded, tensor)
from dmlcore.learners.base import check_fraction, validation_split

LOSSES = ("U", "V")
KERNEL_SCALES = ("standardized", "raw")
SCALES = ("standardized", "raw")
PIXEL_KERNEL_SCALE = 0.05
VAL_KERNEL_ROWS = 4000   # validation rows in one risk evaluation at most (the kernel is rows x rows)
# float32 exp(t) for t < -87 is a subnormal or 0, which the CPU computes about ten times slower than
# a normal number; on raw columns most kernel entries are that small, so the exponent is floored
# here (entries become at most 1.7e-38 instead of smaller: no change to the risk).
MIN_EXPONENT = -87.0


class NMMR(PeerEstimator):
    """Neural maximum moment restriction.

    Parameters
    ----------
    loss : "U" (default) or "V"
    depth : int, default 3, hidden layers
    width : int, default 80
    lr : float, default 0.001
    l2_penalty : float, default 3e-6 (Adam's weight decay)
    batch_size : int, default 1000
    epochs : int, default 3000
    val_fraction : float, default 0 (keep the last epoch), rows held out to choose the epoch
    kernel_scale : str, default "raw"
        ``"raw"`` (the NMMR code's) or ``"standardized"``.
    scale : str, default "raw"
        ``"raw"`` (the network on the raw inputs and outcome, as the NMMR code) or ``"standardized"``.
    out_relu : bool, default False, a ReLU on the network's output (the NMMR code's network has
        one, though its comment says the last layer is exempt)
    seed : int, default 0
    device : str, default "auto"
    """

    title, problem = "NMMR", "pcl"

    def __init__(self, loss: str = "U", depth: int = 3, width: int = 80, lr: float = 1e-3,
                 l2_penalty: float = 3e-6, batch_size: int = 1000, epochs: int = 3000, val_fraction: float = 0.0,
                 kernel_scale: str = "raw", scale: str = "raw", out_relu: bool = False,
                 seed: int = DEFAULTS.seed, device=DEFAULTS.device):
        self.loss = loss
        self.depth = depth
        self.width = width
        self.lr = lr
        self.l2_penalty = l2_penalty
        self.batch_size = batch_size
        self.epochs = epochs
        self.val_fraction = val_fraction
        self.kernel_scale = kernel_scale
        self.scale = scale
        self.out_relu = out_relu
        self.seed = seed
        self.device = device

    def _fit_peer(self, data, monitor):
        check_choice("loss", self.loss, LOSSES)
        check_choice("kernel_scale", self.kernel_scale, KERNEL_SCALES)
        check_choice("scale", self.scale, SCALES)
        check_choice("out_relu", self.out_relu, (True, False))
        check_nn_settings(depth=self.depth, width=self.width, lr=self.lr, l2_penalty=self.l2_penalty,
                          batch_size=self.batch_size, epochs=self.epochs)
        check_fraction("val_fraction", self.val_fraction, allow_zero=True, allow_one=False)
        device = device_of(self.device)
        arr = data.cmr()
        raw = self.scale == "raw"
        self.h_cols_ = Columns(data, arr.input_names).fit(arr.inputs, standardize=not raw)
        k_cols = Columns(data, arr.conditioning_names).fit(arr.conditioning,
                                                            standardize=self.kernel_scale == "standardized")
        kernel_in = k_cols(arr.conditioning)
        if k_cols.image:
            kernel_in[:, k_cols.image[0]] *= PIXEL_KERNEL_SCALE
        self.scale_ = Scale(arr.y, center=not raw, scale=not raw)
        rng = np.random.default_rng([self.seed, 47])
        if self.val_fraction > 0:
            train, val = validation_split(np.arange(arr.n), self.val_fraction, rng)
            if len(val) > VAL_KERNEL_ROWS:
                val = np.sort(rng.choice(val, VAL_KERNEL_ROWS, replace=False))
        else:
            train, val = np.arange(arr.n), None
        h_in, k_in = tensor(self.h_cols_(arr.inputs), device), tensor(kernel_in, device)
        y = tensor(self.scale_(arr.y), device)
        epochs = int(self.epochs)
        with seeded(self.seed, device):
            net = Net(h_in.shape[1], (int(self.width),) * int(self.depth), 1, image=self.h_cols_.image,
                      out_relu=self.out_relu).to(device)
            opt = torch.optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.l2_penalty)
            monitor.stage(f"NMMR-{self.loss}: bridge network", start=0.0, end=1.0)
            best, best_state, best_epoch = np.inf, None, epochs - 1
            for epoch in range(epochs):
                net.train()
                total, count = 0.0, 0
                for rows in batches(len(train), int(self.batch_size), rng):
                    if len(rows) < 2:
                        continue
                    idx = torch.as_tensor(train[rows], device=device)
                    risk = self._risk(y[idx] - net(h_in[idx]).squeeze(1), k_in[idx])
                    opt.zero_grad()
                    risk.backward()
                    opt.step()
                    total, count = total + risk.item() * len(rows), count + len(rows)
                monitor.check()
                train_risk = total / max(count, 1)
                val_risk = None
                if val is not None:
                    net.eval()
                    with torch.no_grad():
                        idx = torch.as_tensor(val, device=device)
                        val_risk = self._risk(y[idx] - net(h_in[idx]).squeeze(1), k_in[idx], "V").item()
                if not np.isfinite(train_risk) or (val_risk is not None and not np.isfinite(val_risk)):
                    raise diverged(f"NMMR-{self.loss}", epoch, f"the risk became {train_risk}")
                monitor.loss("f", None, epoch, train_risk, val_risk, of=epochs)
                if val_risk is not None and val_risk < best:
                    best, best_state, best_epoch = val_risk, copy.deepcopy(net.state_dict()), epoch
            if best_state is not None:
                net.load_state_dict(best_state)
        history = monitor.histories.get(("f", None), {})
        self.chosen_epoch_ = best_epoch
        self.net_, self.torch_device_ = net, device
        self.device_ = str(device)
        self.input_columns_ = list(arr.input_names)
        self.fold_losses_ = [{"fold": 0, "rows": int(arr.n), "validation_rows": 0 if val is None else int(len(val)),
                              "chosen_epoch": self.chosen_epoch_,
                              "second_stage_loss": float(best if val is not None else history["train"][-1])}]
        self.second_stage_history_ = history
        if val is not None:
            self.notes_.append(f"NMMR-{self.loss} kept epoch {self.chosen_epoch_}, the lowest V-statistic risk on "
                               f"{len(val)} validation rows.")

    def _risk(self, r: torch.Tensor, k_in: torch.Tensor, loss: str | None = None) -> torch.Tensor:
        kernel = torch.exp((-0.5 * torch.cdist(k_in, k_in) ** 2).clamp_min(MIN_EXPONENT))
        n = len(r)
        if (loss or self.loss) == "U":
            kernel = kernel - torch.diag(torch.diagonal(kernel))
            return r @ kernel @ r / (n * (n - 1))
        return r @ kernel @ r / n ** 2

    def _predict(self, x):
        return self.scale_.back(predict_in_batches(self.net_, self.h_cols_(x), self.torch_device_).ravel())
