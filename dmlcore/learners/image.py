"""K independent CNN + MLP networks for inputs that contain a picture, trained together.

:class:`BatchedImageMLP` is the image counterpart of :class:`dmlcore.learners._batched.BatchedMLP`:
the same constructor arguments and the same ``forward(x, active=None)`` contract
((K or len(active), B, d_in) -> (.., B, d_out)), so ``train_batched`` trains it unchanged.
``image_index`` names the positions of the pixel features among the d_in inputs (row-major,
``image_shape`` = (height, width)); they are reshaped to one-channel pictures and read by a
convolutional feature extractor (the paper's *ImageFeature*, appendix E); its features,
followed by the other inputs in their original order, feed a :class:`BatchedMLP` head.

The K fold extractors run as ONE grouped convolution per layer: fold k's pictures are channel
group k of a (B, K * channels, H, W) tensor and the weights, stored as (K, out, in, kh, kw),
are flattened to (K * out, in, kh, kw) with ``groups=K``. ``active`` picks fold weights before
flattening, so stopped folds cost nothing. Groups never mix, so fold k's outputs and gradients
depend on fold k's inputs and weights alone. Every parameter carries the fold axis first, as
``train_batched`` (best-state bookkeeping) and ``_clip_per_fold`` require.

Dropout masks are drawn for all K folds and then indexed by ``active`` (as in BatchedMLP), so
one fold's randomness never depends on which other folds are still training; on a GPU they are
drawn there (``_batched.noise_on``). The model moves to a device like any torch module; the index
buffers of scattered pixel positions move with it.

Extractors (``extractor=`` a preset name or a layer list, see :data:`EXTRACTORS`):

* ``small`` (default for pictures under 16 px, e.g. the 8x8 digits): conv3x3x16 (pad 1) -
  pool2 - dropout - conv3x3x32 (pad 1) - pool2 - dropout - FC 32*2*2 -> 64, dropout 0.3.
* ``mnist``: the paper's MNIST ImageFeature for 28x28 (conv3x3x32 - pool - dropout -
  conv3x3x64 - pool - dropout - conv3x3x64 - dropout - FC 576 -> 64, dropout 0.3).
* ``dsprites``: the paper's dSprites ImageFeature for 64x64 (conv5x5x64 - pool - dropout -
  conv5x5x128 - pool - dropout - conv5x5x128 - dropout - pool - FC 2048 -> 128, dropout 0.2).
* ``dsprites-slim`` (default for 32 px and more): the same layers with 16/32/32 channels
  (FC 512 -> 128), about 15 times fewer multiply-adds.

Cost (forward + backward of one training step, hidden 128-64-32, 1 torch thread on the 2-core
development CPU, which other jobs shared, so minima over steps; load made single runs up to 2x
slower): 8x8, K=10, B=256: 55-110 ms (BatchedMLP on the same 65 inputs: 10-16 ms); 64x64,
K=1, B=100: slim 130-250 ms, paper 1.6-2.4 s; 64x64, K=5, B=100: slim 1.0-1.5 s. Prediction
of 1000 distinct 64x64 pictures: slim 1 s, paper 11 s. Channels-last activations were 1.1-2x
faster than contiguous ones; the grouped convolution beat a loop over folds at 8x8 and was
within a factor 1.5 of it (either way) at 64x64.

Memory: the activations of a training step are hundreds of MB (a 256 x 160 x 60 x 60 tensor is
590 MB). glibc's malloc hands allocations over 32 MB to fresh ``mmap`` pages and returns them on
free, so every step page-faulted its activations in again: a third of a K = 10 step's time was
system time. Building an image network therefore switches glibc to its heap for all sizes and
keeps up to 1 GiB of freed memory for reuse (:func:`keep_freed_memory`), once per process;
``DMLCORE_KEEP_FREED_MEMORY=0`` opts out. Measured on the development CPU: one K = 10, B = 256
step at 64x64 from 4.5-4.7 to 3.0-3.1 s, peak memory 2.3 to 2.9-3.4 GB (docs/benchmarks.md).

Inputs: the pixels should reach the model on one common scale (e.g. raw [0, 1] values, or one
mean and standard deviation over all pixels): per-pixel standardization breaks the convolution's
translation invariance and blows up pixels that are almost always blank in training.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import platform

import torch
import torch.nn.functional as F
from torch import nn

from dmlcore.errors import DMLCoreError
from dmlcore.learners._batched import BatchedMLP, dropout_mask, dropout_noise, noise_on

# A layer is ("conv", out_channels, kernel, padding), ("pool", size) (max-pooling, stride =
# size) or ("dropout",); "features" is the width of the final FC + ReLU layer.
EXTRACTORS = {
    "small": dict(layers=(("conv", 16, 3, 1), ("pool", 2), ("dropout",),
                          ("conv", 32, 3, 1), ("pool", 2), ("dropout",)),
                  features=64, dropout=0.3),
    "mnist": dict(layers=(("conv", 32, 3, 0), ("pool", 2), ("dropout",),
                          ("conv", 64, 3, 0), ("pool", 2), ("dropout",),
                          ("conv", 64, 3, 0), ("dropout",)),
                  features=64, dropout=0.3),
    "dsprites": dict(layers=(("conv", 64, 5, 0), ("pool", 2), ("dropout",),
                             ("conv", 128, 5, 0), ("pool", 2), ("dropout",),
                             ("conv", 128, 5, 0), ("dropout",), ("pool", 2)),
                     features=128, dropout=0.2),
    "dsprites-slim": dict(layers=(("conv", 16, 5, 0), ("pool", 2), ("dropout",),
                                  ("conv", 32, 5, 0), ("pool", 2), ("dropout",),
                                  ("conv", 32, 5, 0), ("dropout",), ("pool", 2)),
                          features=128, dropout=0.2),
}


_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4     # mallopt parameters (glibc's malloc.h)


@functools.cache
def keep_freed_memory() -> bool:
    """Let glibc reuse freed memory of any size instead of unmapping it (once per process).

    Returns whether the setting is in force: False off glibc, or with
    ``DMLCORE_KEEP_FREED_MEMORY=0``. It affects the whole process (see the module docstring).
    """
    wanted = os.environ.get("DMLCORE_KEEP_FREED_MEMORY", "1").strip()
    if wanted not in ("0", "1"):
        raise DMLCoreError(f"DMLCORE_KEEP_FREED_MEMORY must be 1 (keep freed memory, the default) or 0 "
                           f"(return it to the system); got {wanted!r}.")
    if wanted == "0" or platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(None)
    return bool(libc.mallopt(_M_MMAP_MAX, 0)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, 2 ** 30))


def default_extractor(image_shape) -> str:
    """The preset for pictures of ``image_shape``: small under 16 px, mnist under 32, else slim."""
    side = min(image_shape)
    if side < 16:
        return "small"
    if side < 32:
        return "mnist"
    return "dsprites-slim"


def _uniform(shape, bound, generator):
    return (torch.rand(*shape, generator=generator) * 2 - 1) * bound


class BatchedImageMLP(nn.Module):
    """K independent CNN + MLP models: input (K, B, d_in) -> (K, B, d_out).

    Parameters
    ----------
    folds, d_in, hidden, d_out, dropout, generator
        As for :class:`BatchedMLP`; ``hidden`` and ``dropout`` are those of the MLP head.
    image_index : list of int
        Positions of the pixel features among the d_in inputs, in row-major pixel order;
        ``len(image_index) == height * width``.
    image_shape : (height, width)
    extractor : str or dict, optional
        A key of :data:`EXTRACTORS` or a dict like its values; default by picture size
        (:func:`default_extractor`).
    conv_dropout : float, optional
        Dropout rate inside the extractor; default the extractor's (paper: 0.3 / 0.2).
    """

    def __init__(self, folds: int, d_in: int, hidden, d_out: int, dropout: float, generator=None, *,
                 image_index, image_shape, extractor=None, conv_dropout: float | None = None):
        super().__init__()
        index = [int(i) for i in image_index]
        height, width = (int(s) for s in image_shape)
        if height < 1 or width < 1 or len(index) != height * width:
            raise DMLCoreError(f"image_shape {tuple(image_shape)} needs {height * width} pixel "
                               f"features; image_index has {len(index)}.")
        if len(set(index)) != len(index) or min(index) < 0 or max(index) >= d_in:
            raise DMLCoreError(f"image_index must hold distinct positions in 0..{d_in - 1}.")
        self.folds = int(folds)
        keep_freed_memory()
        self.noise = dropout_noise(generator)
        # channels-last activations measured 1.1-2x faster on CPU for the grouped convolutions
        # and the pooling (benchmarks in the module docstring)
        self.channels_last = True
        self.image_shape = (height, width)
        self.image_index = index
        pixel_set = set(index)
        self.other_index = [i for i in range(d_in) if i not in pixel_set]
        # contiguous runs are sliced (a view), anything else gathered by an index buffer, which
        # moves with the model to its device
        for attr, positions in (("_pixels", index), ("_others", self.other_index)):
            where = _as_slice(positions)
            if isinstance(where, torch.Tensor):
                self.register_buffer(attr, where, persistent=False)
            else:
                setattr(self, attr, where)
        if isinstance(extractor, dict):
            spec = extractor
        else:
            name = extractor or default_extractor(self.image_shape)
            if name not in EXTRACTORS:
                raise DMLCoreError(f"Unknown image extractor {name!r}; choose one of {', '.join(EXTRACTORS)}.")
            spec = EXTRACTORS[name]
        self.layers = tuple(tuple(layer) for layer in spec["layers"])
        self.conv_dropout = float(spec.get("dropout", 0.0) if conv_dropout is None else conv_dropout)
        if not 0.0 <= self.conv_dropout < 1.0:
            raise DMLCoreError(f"conv_dropout must be in [0, 1); got {self.conv_dropout}.")

        self.conv_weights = nn.ParameterList()
        self.conv_biases = nn.ParameterList()
        channels, h, w = 1, height, width
        for layer in self.layers:
            if layer[0] == "conv":
                _, out, kernel, pad = layer
                bound = 1.0 / math.sqrt(channels * kernel * kernel)
                self.conv_weights.append(nn.Parameter(
                    _uniform((folds, out, channels, kernel, kernel), bound, generator)))
                self.conv_biases.append(nn.Parameter(_uniform((folds, out), bound, generator)))
                channels, h, w = out, h + 2 * pad - kernel + 1, w + 2 * pad - kernel + 1
            elif layer[0] == "pool":
                h, w = h // layer[1], w // layer[1]
            elif layer[0] != "dropout":
                raise DMLCoreError(f"Unknown extractor layer {layer!r}.")
            if h < 1 or w < 1:
                raise DMLCoreError(f"The extractor shrinks a {height}x{width} picture to nothing; "
                                   "choose a smaller one.")
        flat = channels * h * w
        self.flat_features = flat
        self.image_features = int(spec["features"])
        bound = 1.0 / math.sqrt(flat)
        self.fc_weight = nn.Parameter(_uniform((folds, flat, self.image_features), bound, generator))
        self.fc_bias = nn.Parameter(_uniform((folds, 1, self.image_features), bound, generator))
        self.head = BatchedMLP(folds, self.image_features + len(self.other_index), hidden, d_out,
                               dropout, generator)

    @property
    def dropout(self) -> float:
        return self.head.dropout

    # ------------------------------------------------------------------ pieces
    def features(self, pixels, active=None, train: bool | None = None):
        """Image features (Ka, B, image_features) of pictures (Ka, B, height * width)."""
        train = self.training if train is None else train
        ka, batch = pixels.shape[0], pixels.shape[1]
        h = pixels.reshape(ka, batch, *self.image_shape).transpose(0, 1)      # (B, Ka, H, W)
        if self.channels_last:
            h = h.contiguous(memory_format=torch.channels_last)
        conv, relu_due = 0, False
        for layer in self.layers:
            if layer[0] == "conv":
                if relu_due:
                    h = torch.relu(h)
                w, b = self.conv_weights[conv], self.conv_biases[conv]
                if active is not None:
                    w, b = w[active], b[active]
                h = F.conv2d(h, w.reshape(-1, *w.shape[2:]), b.reshape(-1), padding=layer[3], groups=ka)
                # ReLU commutes with max-pooling and dropout, so it waits for the smallest tensor
                conv, relu_due = conv + 1, True
            elif layer[0] == "pool":
                h = F.max_pool2d(h, layer[1])
            elif train and self.conv_dropout > 0:
                # (K, B, C, h, w) masks for every fold, then the active ones
                c = h.shape[1] // ka
                mask = dropout_mask((self.folds, batch, c, h.shape[2], h.shape[3]), self.conv_dropout,
                                    noise_on(self, h.device), active)
                h = h * mask.transpose(0, 1).reshape(h.shape)
        if relu_due:
            h = torch.relu(h)
        h = h.reshape(batch, ka, -1).transpose(0, 1)                           # (Ka, B, flat)
        w, b = self.fc_weight, self.fc_bias
        if active is not None:
            w, b = w[active], b[active]
        return torch.relu(torch.baddbmm(b, h, w))

    def forward(self, x, active=None, shared_images: int = 1):
        """x (K or len(active), B, d_in) -> (.., B, d_out).

        ``shared_images`` = r > 1 declares that rows i*r .. i*r + r - 1 hold the same picture
        (as the draws of one row in the second stage do): the extractor then reads every r-th
        row only and its features are repeated, r times less work. In training mode the
        extractor's dropout mask is then shared by those r rows as well. In eval mode, runs of
        consecutive rows with the same picture (in every fold) are found and read once anyway.
        """
        pixels = x[..., self._pixels]
        if shared_images > 1:
            if x.shape[1] % shared_images:
                raise DMLCoreError(f"shared_images={shared_images} must divide the batch size {x.shape[1]}.")
            feats = self.features(pixels[:, ::shared_images], active)
            feats = feats.repeat_interleave(shared_images, dim=1)
        elif self.training:
            feats = self.features(pixels, active)
        else:
            feats = self._eval_features(pixels, active)
        return self.head(torch.cat([feats, x[..., self._others]], dim=-1), active)

    def single(self, k: int, x):
        """Fold model k on x (B, d_in), without dropout: :func:`single_forward`."""
        return single_forward(self, k, x)

    def _eval_features(self, pixels, active, chunk: int | None = None):
        """Features without dropout, each run of repeated pictures read once, ``chunk`` pictures
        at a time (default: about 2**26 floats of activations per layer)."""
        starts, run_of_row = _runs(pixels)
        unique = pixels if starts is None else pixels[:, starts]
        widest = max([layer[1] for layer in self.layers if layer[0] == "conv"] or [1])
        step = chunk or max(1, 2 ** 26 // (pixels.shape[0] * widest * pixels.shape[-1]))
        parts = [self.features(unique[:, i:i + step], active, train=False)
                 for i in range(0, max(unique.shape[1], 1), step)]
        feats = torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]
        return feats if starts is None else feats[:, run_of_row]


def _runs(pixels):
    """(first row of each run, run of each row) for runs of consecutive rows whose pictures agree
    in every fold; (None, None) when no picture repeats."""
    batch = pixels.shape[1]
    if batch < 2:
        return None, None
    new = torch.ones(batch, dtype=torch.bool, device=pixels.device)
    new[1:] = (pixels[:, 1:] != pixels[:, :-1]).any(dim=-1).any(dim=0)
    if bool(new.all()):
        return None, None
    return torch.nonzero(new).flatten(), torch.cumsum(new, 0) - 1


def _as_slice(index: list[int]):
    if index and index == list(range(index[0], index[0] + len(index))):
        return slice(index[0], index[0] + len(index))
    return torch.as_tensor(index, dtype=torch.long)


def single_forward(model: BatchedImageMLP, k: int, x, chunk: int | None = None):
    """Fold model k on x (B, d_in) -> (B, d_out), without dropout (like ``BatchedMLP.single``).

    Each run of consecutive rows with the same picture goes through the extractor once, in
    chunks of ``chunk`` pictures (default: bounded memory, see ``_eval_features``). Does not
    switch autograd off: call it under ``torch.no_grad()`` for prediction.
    """
    feats = model._eval_features(x[None, :, model._pixels], [int(k)], chunk)[0]
    return model.head.single(k, torch.cat([feats, x[:, model._others]], dim=-1))
