"""K independent MLPs evaluated as one batch: the fold models of the neural-network nuisances.

:class:`BatchedMLP` holds K fold models whose weights carry a leading fold axis; ``forward``
multiplies a (K, batch, features) tensor through them with ``torch.baddbmm`` and ``single``
evaluates one fold model. Its dropout masks (:func:`dropout_mask`) come from the model's own
random stream (:func:`dropout_noise`, :func:`noise_on`). Both :mod:`dmlcore.learners.nn` and
the image networks of :mod:`dmlcore.learners.image` (whose MLP head this is) build on it.
"""

from __future__ import annotations

import math
import weakref

import numpy as np
import torch
from torch import nn


class BatchedMLP(nn.Module):
    """K independent MLPs evaluated together: input (K, B, d_in) -> (K, B, d_out)."""

    def __init__(self, folds: int, d_in: int, hidden, d_out: int, dropout: float, generator=None):
        super().__init__()
        sizes = [d_in, *hidden, d_out]
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for a, b in zip(sizes[:-1], sizes[1:]):
            bound = 1.0 / math.sqrt(a)
            w = (torch.rand(folds, a, b, generator=generator) * 2 - 1) * bound
            bias = (torch.rand(folds, 1, b, generator=generator) * 2 - 1) * bound
            self.weights.append(nn.Parameter(w))
            self.biases.append(nn.Parameter(bias))
        self.dropout = float(dropout)
        self.noise = dropout_noise(generator)

    def forward(self, x, active=None):
        """``active`` (fold indices) evaluates only those fold models; x is then (len(active), B, d)."""
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            if active is not None:
                w, b = w[active], b[active]
            x = torch.baddbmm(b, x, w)
            if i < last:
                x = torch.relu(x)
                if self.training and self.dropout > 0:
                    x = x * dropout_mask((self.weights[i].shape[0], *x.shape[1:]), self.dropout,
                                         noise_on(self, x.device), active)
        return x

    def single(self, k: int, x):
        """Evaluate fold model k on x (B, d), without dropout."""
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            x = torch.addmm(b[k], x, w[k])
            if i < last:
                x = torch.relu(x)
        return x


def dropout_noise(generator=None) -> np.random.Generator:
    """The dropout masks' own random stream, seeded from the model's generator (no global state)."""
    return np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=generator)))


_DEVICE_NOISE: "weakref.WeakKeyDictionary[nn.Module, tuple]" = weakref.WeakKeyDictionary()


def noise_on(module: nn.Module, device: torch.device):
    """The dropout stream of ``module`` for activations on ``device``.

    On the CPU, the module's numpy generator ``noise``. Elsewhere, a torch generator on that
    device, seeded by one draw from ``noise`` the first time it is needed (again whenever
    ``noise`` is replaced), so masks are drawn where they are used instead of copied each step.
    The generator is kept outside the module, which thus pickles without it.
    """
    if device.type == "cpu":
        return module.noise
    cached = _DEVICE_NOISE.get(module)
    if cached is None or cached[0] is not module.noise or cached[1] != device:
        gen = torch.Generator(device).manual_seed(int(module.noise.integers(0, 2**63)))
        cached = _DEVICE_NOISE[module] = (module.noise, device, gen)
    return cached[2]


def dropout_mask(shape, rate: float, noise, active=None) -> torch.Tensor:
    """Inverted-dropout multipliers (0 or 1 / (1 - rate)) for every fold model, then the active ones.

    Masks are drawn for all K fold models (``shape[0]``), so one fold's randomness never
    depends on which other folds are still training. With a numpy generator as ``noise``
    (the CPU), draws are 16-bit integers from numpy's PCG64 (``rate`` is rounded to a multiple
    of 1/65536): on a CPU that is about three times cheaper than ``torch.rand``, and the masks
    are a fifth of a small network's training time. With a torch generator (another device,
    :func:`noise_on`), ``torch.rand`` on that generator's device.
    """
    if isinstance(noise, torch.Generator):
        keep = torch.rand(shape, generator=noise, device=noise.device) >= rate
    else:
        keep = torch.from_numpy(noise.integers(0, 65536, size=shape, dtype=np.uint16) >= round(rate * 65536))
    if active is not None:
        keep = keep[active]
    return keep.to(torch.float32).mul_(1.0 / (1.0 - rate))
