"""Neural-network nuisances, trained for all folds at once.

The K fold models of a nuisance are one :class:`BatchedMLP` whose weights carry a leading
fold axis; a training step multiplies a (K, batch, features) tensor through them with
``torch.baddbmm``. Every fold model sees only its own rows, standardized with its own
training statistics; losses are summed over folds, so the gradient (and AdamW's per-element
update) of fold model k depends on fold k's data alone. Gradient clipping is per fold model.
Each fold model holds out a random part of its training rows for early stopping and keeps
the weights of its best validation epoch.

Models and their data live on one torch device (``device``, resolved by
:func:`dmlcore.device.resolve_device`): the data are copied there once per fit, and each epoch's
batch order once per epoch. Initial weights always come from a CPU generator, so they are the
same on every device; dropout masks come from numpy on the CPU and from a torch generator of the
device elsewhere (:func:`noise_on`), so CPU and GPU fits of one seed differ beyond rounding.

Defaults follow the paper's appendix E (hidden 128-64-32, ReLU, dropout 1000 / (5000 + N),
AdamW with weight decay 1e-3, a 10-component Gaussian mixture for the conditional
distribution); the learning rate, batch size and stopping rule were chosen by validation loss
(see docs/benchmarks.md).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from dmlcore.learners._batched import BatchedMLP, dropout_mask, dropout_noise, noise_on  # noqa: F401 (public here too)
from dmlcore.learners.base import (ConditionalSampler, OutcomeLearner, check_fraction, check_hidden, check_positive,
                                   merge_params, validation_split)
from dmlcore.learners.image import BatchedImageMLP
from dmlcore.stats.resample import SEED


DEFAULTS = dict(hidden=(128, 64, 32), dropout=None, lr=2e-3, weight_decay=1e-3, batch_size=256,
                max_epochs=100, patience=10, val_fraction=0.1, components=10, clip=5.0)


def default_dropout(n: int) -> float:
    return min(1000.0 / (5000.0 + n), 0.5)


def _clip_per_fold(params, max_norm: float) -> None:
    grads = [p.grad for p in params if p.grad is not None]
    sq = sum(g.reshape(g.shape[0], -1).pow(2).sum(dim=1) for g in grads)
    scale = torch.clamp(max_norm / (sq.sqrt() + 1e-6), max=1.0)
    for g in grads:
        g.mul_(scale.view(-1, *([1] * (g.dim() - 1))))


def _pad_rows(sets: list[np.ndarray], length: int, rng) -> np.ndarray:
    """Each fold's rows, shuffled and wrapped around to a common length: (K, length)."""
    out = np.empty((len(sets), length), dtype=np.int64)
    for k, rows in enumerate(sets):
        reps = int(math.ceil(length / len(rows)))
        out[k] = np.concatenate([rng.permutation(rows) for _ in range(reps)])[:length]
    return out


class _FoldData:
    """Per-fold standardized views of (inputs, targets), held on ``device``."""

    def __init__(self, C, T, train_sets, val_fraction, rng, device: torch.device | str = "cpu"):
        self.device = torch.device(device)
        self.C = torch.tensor(C, dtype=torch.float32, device=self.device)
        self.T = torch.tensor(T, dtype=torch.float32, device=self.device)
        self.fit_rows, self.val_rows = zip(*(validation_split(r, val_fraction, rng) for r in train_sets))
        stats = [(C[r].mean(0), C[r].std(0), T[r].mean(0), T[r].std(0)) for r in train_sets]
        as_t = lambda i: torch.as_tensor(np.stack([s[i] for s in stats]), dtype=torch.float32,
                                         device=self.device)[:, None, :]
        self.c_mean, self.t_mean = as_t(0), as_t(2)
        self.c_std = torch.clamp(as_t(1), min=1e-6)
        self.t_std = torch.clamp(as_t(3), min=1e-6)

    def to(self, device) -> "_FoldData":
        """Move every tensor to ``device``."""
        self.device = torch.device(device)
        for name in ("C", "T", "c_mean", "c_std", "t_mean", "t_std"):
            setattr(self, name, getattr(self, name).to(self.device))
        return self

    def inputs(self, idx, folds=slice(None)):
        return (self.C[idx] - self.c_mean[folds]) / self.c_std[folds]

    def targets(self, idx, folds=slice(None)):
        return (self.T[idx] - self.t_mean[folds]) / self.t_std[folds]


class CpuAdamW:
    """AdamW on the CPU, step for step what ``torch.optim.AdamW`` computes there (its single-tensor loop:
    decoupled weight decay, then the moments, then the bias-corrected step; the same operations in the same
    order, so the same numbers): ``zero_grad(set_to_none=True)`` and ``step()``.

    Why not torch's: every ``torch.optim`` optimizer imports ``torch._dynamo`` (with sympy and
    torch.distributed) on its first use, whether or not anything is compiled -- seconds of import in the
    command's process and again in each refit worker (bench/perf/import_time.py). On a GPU :func:`adamw` still
    returns torch's fused kernel.
    """

    def __init__(self, parameters, lr: float, weight_decay: float, betas=(0.9, 0.999), eps: float = 1e-8):
        self.params = list(parameters)
        if not self.params:
            raise ValueError("CpuAdamW got an empty parameter list")
        self.lr, self.weight_decay, self.eps = float(lr), float(weight_decay), float(eps)
        self.beta1, self.beta2 = (float(b) for b in betas)
        self.steps = [0] * len(self.params)
        self.exp_avg = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.detach_()
                p.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        lr, beta1, beta2 = self.lr, self.beta1, self.beta2
        for i, param in enumerate(self.params):
            grad = param.grad
            if grad is None:   # torch skips a parameter without a gradient (its step count stays)
                continue
            self.steps[i] += 1
            step = float(self.steps[i])
            if self.weight_decay != 0:
                param.mul_(1 - lr * self.weight_decay)
            self.exp_avg[i].lerp_(grad, 1 - beta1)
            self.exp_avg_sq[i].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
            denom = (self.exp_avg_sq[i].sqrt() / bias_correction2_sqrt).add_(self.eps)
            param.addcdiv_(self.exp_avg[i], denom, value=-(lr / bias_correction1))


def adamw(parameters, params: dict, device: torch.device):
    """AdamW with the ``lr`` and ``weight_decay`` of ``params``: on a GPU torch's fused kernel (one launch per
    step, where the CPU's loop runs one operation per tensor at a time), on the CPU :class:`CpuAdamW` (the same
    numbers as torch's, without importing ``torch._dynamo``)."""
    if torch.device(device).type == "cuda":
        return torch.optim.AdamW(parameters, lr=params["lr"], weight_decay=params["weight_decay"], fused=True)
    return CpuAdamW(parameters, lr=params["lr"], weight_decay=params["weight_decay"])


def train_batched(model, data: _FoldData, loss_fn, params: dict, monitor, name: str, seed: int):
    """Mini-batch AdamW for all fold models with per-fold early stopping; loads the best weights.

    ``model`` and ``data`` are on the same device; nothing in a step waits for that device.
    """
    rng = np.random.default_rng(seed)
    device = data.device
    K = len(data.fit_rows)
    opt = adamw(model.parameters(), params, device)
    bs = int(params["batch_size"])
    n_max = max(len(r) for r in data.fit_rows)
    steps = max(1, int(math.ceil(n_max / bs)))
    n_val = max(len(r) for r in data.val_rows)
    val_mask = torch.zeros(K, n_val)
    for k, r in enumerate(data.val_rows):
        val_mask[k, : len(r)] = 1.0
    val_mask = val_mask.to(device)
    val_idx = torch.stack([torch.as_tensor(np.concatenate(
        [r, np.full(n_val - len(r), r[0])])) for r in data.val_rows]).to(device)
    best = torch.full((K,), 1e30, device=device)
    best_state = [p.detach().clone() for p in model.parameters()]
    waited = torch.zeros(K, dtype=torch.long, device=device)
    for epoch in range(int(params["max_epochs"])):
        # fold models whose validation loss stopped improving leave the batch
        active = torch.nonzero(waited <= params["patience"]).flatten()
        if len(active) == 0:
            break
        model.train()
        order = torch.as_tensor(_pad_rows(data.fit_rows, steps * bs, rng)).to(device)[active]
        # while every fold trains, skip the gathers of weights and statistics
        sel, folds = (None, slice(None)) if len(active) == K else (active, active)
        total = torch.zeros(len(active), device=device)
        for step in range(steps):
            idx = order[:, step * bs:(step + 1) * bs]
            per_fold = loss_fn(model(data.inputs(idx, folds), sel), data.targets(idx, folds)).mean(dim=1)
            opt.zero_grad(set_to_none=True)
            per_fold.sum().backward()
            _clip_per_fold(list(model.parameters()), params["clip"])
            opt.step()
            total += per_fold.detach()
        model.eval()
        with torch.no_grad():
            losses = loss_fn(model(data.inputs(val_idx[active], active), active), data.targets(val_idx[active], active))
            val = (losses * val_mask[active]).sum(1) / val_mask[active].sum(1)
        train, val_list = (total / steps).tolist(), val.tolist()
        for j, k in enumerate(active.tolist()):
            monitor.loss(name, k, epoch, train[j], val_list[j], of=int(params["max_epochs"]))
        improved = torch.zeros(K, dtype=torch.bool, device=device)
        improved[active] = val < best[active] - 1e-6 * best[active].abs().clamp(min=1.0)
        best[active] = torch.where(improved[active], val, best[active])
        waited[active] = torch.where(improved[active], 0, waited[active] + 1)
        with torch.no_grad():
            for saved, p in zip(best_state, model.parameters()):
                saved[improved] = p[improved]
        monitor.check()
    with torch.no_grad():
        for saved, p in zip(best_state, model.parameters()):
            p.copy_(saved)
    model.eval()
    return model


def make_network(folds, d_in, params, d_out, gen, image=None, data: "_FoldData | None" = None,
                 device: torch.device | str = "cpu"):
    """A BatchedMLP, or with ``image=(pixel positions, shape)`` a CNN feature extractor + MLP head,
    on ``device`` (initialized on the CPU by ``gen``, then moved).

    Pixels stay raw (already in [0, 1]): per-column standardization would blow up near-constant pixels.
    """
    if image is None:
        return BatchedMLP(folds, d_in, params["hidden"], d_out, params["dropout"], gen).to(device)
    idx, shape = image
    if data is not None:
        data.c_mean[:, :, idx] = 0.0
        data.c_std[:, :, idx] = 1.0
    return BatchedImageMLP(folds, d_in, params["hidden"], d_out, params["dropout"], gen,
                           image_index=list(idx), image_shape=tuple(shape)).to(device)


def _move(learner, device):
    """Move a fitted learner's fold models and their data to ``device``; returns the learner."""
    learner.model_.to(device)
    learner.data_.to(device)
    return learner


def _resolve(params: dict | None, n: int) -> dict:
    merged = merge_params(params, DEFAULTS, "nn nuisance")
    if merged["dropout"] is None:
        merged["dropout"] = default_dropout(n)
    for key in ("lr", "batch_size", "max_epochs", "components", "clip"):
        check_positive(key, merged[key], integer=key in ("batch_size", "max_epochs", "components"))
    check_positive("weight_decay", merged["weight_decay"], allow_zero=True)
    check_positive("patience", merged["patience"], integer=True, allow_zero=True)
    check_fraction("dropout", merged["dropout"], allow_zero=True, allow_one=False)
    check_fraction("val_fraction", merged["val_fraction"], allow_one=False)
    check_hidden(merged["hidden"])
    return merged


class NeuralOutcome(OutcomeLearner):
    """MLP regression of Y on C, one fold model per training set, on the torch device ``device``."""

    name = "nn"

    def __init__(self, params: dict | None = None, seed: int = SEED, image=None, device: torch.device | str = "cpu"):
        self.params = params
        self.seed = seed
        self.image = image
        self.device = device

    def fit(self, C, y, train_sets, monitor):
        p = _resolve(self.params, len(y))
        gen = torch.Generator().manual_seed(self.seed)
        self.data_ = _FoldData(C, y.reshape(-1, 1), train_sets, p["val_fraction"],
                               np.random.default_rng(self.seed), self.device)
        self.model_ = make_network(len(train_sets), C.shape[1], p, 1, gen, self.image, self.data_, self.device)
        mse = lambda out, t: (out - t).pow(2).mean(dim=-1)
        train_batched(self.model_, self.data_, mse, p, monitor, "s", self.seed)
        return self

    def to(self, device) -> "NeuralOutcome":
        """Move the fitted fold models and their data to ``device``."""
        return _move(self, device)

    def predict(self, k, C):
        d = self.data_
        with torch.no_grad():
            x = (torch.tensor(np.asarray(C), dtype=torch.float32, device=d.device) - d.c_mean[k]) / d.c_std[k]
            out = self.model_.single(k, x) * d.t_std[k] + d.t_mean[k]
        return out[:, 0].cpu().numpy().astype(float)


class MixtureDensity(ConditionalSampler):
    """Mixture density network: a Gaussian mixture (diagonal covariance) for X given C, on ``device``."""

    name = "nn"

    def __init__(self, params: dict | None = None, seed: int = SEED, image=None, device: torch.device | str = "cpu"):
        self.params = params
        self.seed = seed
        self.image = image
        self.device = device

    def _split(self, out):
        m, d = self.components_, self.dim_
        logits = out[..., :m]
        mean = out[..., m: m + m * d].reshape(*out.shape[:-1], m, d)
        log_std = out[..., m + m * d:].reshape(*out.shape[:-1], m, d).clamp(-7.0, 5.0)
        return torch.log_softmax(logits, dim=-1), mean, log_std

    def _nll(self, out, t):
        log_pi, mean, log_std = self._split(out)
        z = (t.unsqueeze(-2) - mean) / log_std.exp()
        log_n = (-0.5 * z.pow(2) - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        return -torch.logsumexp(log_pi + log_n, dim=-1)

    def fit(self, C, X, train_sets, monitor):
        p = _resolve(self.params, len(X))
        self.components_, self.dim_ = int(p["components"]), X.shape[1]
        gen = torch.Generator().manual_seed(self.seed + 1)
        self.data_ = _FoldData(C, X, train_sets, p["val_fraction"], np.random.default_rng(self.seed + 1), self.device)
        d_out = self.components_ * (1 + 2 * self.dim_)
        self.model_ = make_network(len(train_sets), C.shape[1], p, d_out, gen, self.image, self.data_, self.device)
        train_batched(self.model_, self.data_, self._nll, p, monitor, "g", self.seed + 1)
        return self

    def to(self, device) -> "MixtureDensity":
        """Move the fitted fold models and their data to ``device``."""
        return _move(self, device)

    def sample(self, k, C, n_draws, rng):
        d = self.data_
        with torch.no_grad():
            x = (torch.tensor(np.asarray(C), dtype=torch.float32, device=d.device) - d.c_mean[k]) / d.c_std[k]
            log_pi, mean, log_std = (t.cpu() for t in self._split(self.model_.single(k, x)))
        pi = log_pi.exp().numpy().astype(float)
        pi /= pi.sum(1, keepdims=True)
        n = len(C)
        u = rng.random((n, n_draws, 1))
        comp = (u > np.cumsum(pi, axis=1)[:, None, :]).sum(-1).clip(max=self.components_ - 1)
        rows = np.arange(n)[:, None]
        mu = mean.numpy()[rows, comp]
        sd = np.exp(log_std.numpy()[rows, comp])
        draws = mu + sd * rng.standard_normal(mu.shape)
        return draws * d.t_std[k].cpu().numpy() + d.t_mean[k].cpu().numpy()
