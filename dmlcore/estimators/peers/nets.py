"""Networks and optimisers of the neural peers (DFIV, DeepGMM, NMMR).

:class:`Net` is an MLP on prepared columns, or, when some columns are image pixels, the
project's CNN feature extractor (:class:`dmlcore.learners.image.BatchedImageMLP`, one model)
with the MLP as its head. :class:`OAdam` is the optimistic Adam of DeepGMM (Daskalakis et al.
2018): each step moves by -2 u_t + u_(t-1), u_t the Adam update.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
from torch import nn

from dmlcore.device import resolve_device
from dmlcore.errors import FitDiverged
from dmlcore.learners.base import check_fraction, check_hidden, check_positive
from dmlcore.learners.image import BatchedImageMLP


class Net(nn.Module):
    """(B, d_in) -> (B, d_out): ReLU MLP with ``hidden`` widths, dropout after each hidden layer.

    ``image`` = (pixel positions, shape) reads the pixels with the CNN extractor first.
    ``out_norm`` adds a BatchNorm1d on the output (DFIV's instrument features), ``out_relu``
    a ReLU (DFIV's covariate features), ``hidden_norm`` a BatchNorm1d before the last hidden
    layer's ReLU (DFIV's covariate network; MLP only).
    """

    def __init__(self, d_in: int, hidden, d_out: int, *, dropout: float = 0.0, image=None,
                 out_norm: bool = False, out_relu: bool = False, hidden_norm: bool = False):
        super().__init__()
        check_hidden(hidden)
        check_fraction("dropout", dropout, allow_zero=True, allow_one=False)
        if image is not None:
            positions, shape = image
            gen = torch.Generator().manual_seed(int(torch.randint(0, 2 ** 62, (1,))))
            self.body = BatchedImageMLP(1, d_in, tuple(hidden), d_out, dropout, gen,
                                        image_index=list(positions), image_shape=tuple(shape))
        else:
            layers, width = [], d_in
            for i, h in enumerate(hidden):
                norm = [nn.BatchNorm1d(h)] if hidden_norm and i == len(hidden) - 1 else []
                layers += [nn.Linear(width, h), *norm, nn.ReLU()] + ([nn.Dropout(dropout)] if dropout else [])
                width = h
            layers.append(nn.Linear(width, d_out))
            self.body = nn.Sequential(*layers)
        self.image = image is not None
        self.out = nn.Sequential(*([nn.BatchNorm1d(d_out)] if out_norm else []) + ([nn.ReLU()] if out_relu else []))

    def forward(self, x):
        h = self.body(x[None])[0] if self.image else self.body(x)
        return self.out(h)


class OAdam(torch.optim.Optimizer):
    """Optimistic Adam: theta <- theta - 2 u_t + u_(t-1) with u_t = lr m_hat / (sqrt(v_hat) + eps)."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.5, 0.9), eps: float = 1e-8, weight_decay: float = 0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if group["weight_decay"]:
                    grad = grad.add(p, alpha=group["weight_decay"])
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["m"] = torch.zeros_like(p)
                    state["v"] = torch.zeros_like(p)
                    state["previous"] = torch.zeros_like(p)
                state["step"] += 1
                state["m"].mul_(beta1).add_(grad, alpha=1 - beta1)
                state["v"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                m_hat = state["m"] / (1 - beta1 ** state["step"])
                v_hat = state["v"] / (1 - beta2 ** state["step"])
                update = group["lr"] * m_hat / (v_hat.sqrt() + group["eps"])
                p.add_(update, alpha=-2.0).add_(state["previous"])
                state["previous"].copy_(update)


@contextlib.contextmanager
def seeded(seed: int, device: torch.device):
    """Torch's random streams seeded by ``seed`` inside, restored outside."""
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(int(seed))
        yield


def tensor(values: np.ndarray, device: torch.device) -> torch.Tensor:
    return torch.as_tensor(np.asarray(values, dtype=np.float32), device=device)


def device_of(spec) -> torch.device:
    return resolve_device(spec)


def check_nn_settings(**values) -> None:
    """Positive epochs / batch sizes / learning rates, non-negative weight decay."""
    for name, value in values.items():
        if name in ("weight_decay", "l2_penalty"):
            check_positive(name, value, allow_zero=True)
        elif name in ("lr", "lam1", "lam2", "adversary_lr"):
            check_positive(name, value)
        else:
            check_positive(name, value, integer=True)


def predict_in_batches(model: nn.Module, x: np.ndarray, device: torch.device, rows: int = 65_536) -> np.ndarray:
    """model(x) in eval mode, ``rows`` rows at a time, as a float64 array."""
    model.eval()
    out = []
    with torch.no_grad():
        for i in range(0, max(len(x), 1), rows):
            out.append(model(tensor(x[i:i + rows], device)).cpu().numpy())
    return np.concatenate(out).astype(float) if out else np.empty((0, 1))


def batches(n: int, size: int, rng: np.random.Generator):
    """Index arrays covering a random permutation of range(n), ``size`` at a time."""
    perm = rng.permutation(n)
    return [perm[i:i + size] for i in range(0, n, size)] if n else []


def diverged(name: str, epoch: int, why: str) -> FitDiverged:
    return FitDiverged(f"{name} diverged at epoch {epoch}: {why}. Try a smaller learning rate or fewer epochs.")
