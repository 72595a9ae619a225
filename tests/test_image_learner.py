"""Tests of BatchedImageMLP (dmlcore.learners.image): K fold CNNs run as one grouped convolution."""

import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from dmlcore.errors import DMLCoreError
from dmlcore.learners.image import BatchedImageMLP, default_extractor, single_forward
from dmlcore.learners.nn import _FoldData, train_batched
from dmlcore.progress import Monitor

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = (32, 16)


def make(K, shape=(8, 8), d_out=2, dropout=0.2, before=1, after=2, seed=0, **kwargs):
    """A model whose pixels sit between ``before`` and ``after`` other inputs."""
    pixels = shape[0] * shape[1]
    d_in = before + pixels + after
    model = BatchedImageMLP(K, d_in, HIDDEN, d_out, dropout, torch.Generator().manual_seed(seed),
                            image_index=list(range(before, before + pixels)), image_shape=shape, **kwargs)
    return model, d_in


@pytest.mark.parametrize("shape", [(8, 8), (64, 64)])
def test_shapes_and_fold_axis(shape):
    model, d_in = make(3, shape)
    x = torch.rand(3, 5, d_in)
    model.train()
    assert model(x).shape == (3, 5, 2)
    assert model(x[[0, 2]], active=[0, 2]).shape == (2, 5, 2)
    model.eval()
    assert model(x).shape == (3, 5, 2)
    assert single_forward(model, 1, x[1]).shape == (5, 2)
    # train_batched and _clip_per_fold treat axis 0 of every parameter as the fold axis
    assert all(p.shape[0] == 3 for p in model.parameters())


def test_extractor_presets_follow_the_picture_size():
    assert default_extractor((8, 8)) == "small"
    assert default_extractor((28, 28)) == "mnist"
    assert default_extractor((64, 64)) == "dsprites-slim"
    assert make(1, (8, 8))[0].flat_features == 32 * 2 * 2
    assert make(1, (28, 28))[0].flat_features == 576          # the paper's MNIST ImageFeature
    assert make(1, (64, 64), extractor="dsprites")[0].flat_features == 2048   # paper's dSprites one
    assert make(1, (64, 64))[0].flat_features == 32 * 4 * 4


def test_bad_image_arguments_are_refused():
    with pytest.raises(DMLCoreError, match="needs 64 pixel"):
        BatchedImageMLP(2, 70, HIDDEN, 1, 0.1, image_index=list(range(60)), image_shape=(8, 8))
    with pytest.raises(DMLCoreError, match="distinct positions"):
        BatchedImageMLP(2, 70, HIDDEN, 1, 0.1, image_index=list(range(10, 74)), image_shape=(8, 8))
    with pytest.raises(DMLCoreError, match="Unknown image extractor 'vgg'"):
        BatchedImageMLP(2, 64, HIDDEN, 1, 0.1, image_index=list(range(64)), image_shape=(8, 8), extractor="vgg")
    with pytest.raises(DMLCoreError, match="to nothing"):
        BatchedImageMLP(2, 20, HIDDEN, 1, 0.1, image_index=list(range(16)), image_shape=(4, 4),
                        extractor="dsprites")


def test_other_inputs_keep_their_order_and_reach_the_head():
    # pixels scattered among the inputs: columns 0, 3 and the last are not pixels
    index = [1, 2] + list(range(4, 66))
    model = BatchedImageMLP(2, 67, HIDDEN, 1, 0.0, torch.Generator().manual_seed(0),
                            image_index=index, image_shape=(8, 8)).eval()
    assert model.other_index == [0, 3, 66]
    x = torch.rand(2, 4, 67)
    y = x.clone()
    y[..., 3] += 1.0                                   # a non-pixel input matters
    assert not torch.allclose(model(x), model(y))
    z = x.clone()
    z[..., 5] += 1.0                                   # and so does a pixel
    assert not torch.allclose(model(x), model(z))


def reseed(model, seed=1):
    """Restart the dropout streams of the model and its head (the same masks again)."""
    for module in model.modules():
        if hasattr(module, "noise"):
            module.noise = np.random.default_rng(seed)


@pytest.mark.parametrize("train", [False, True])
def test_fold_outputs_ignore_other_folds_inputs_and_weights(train):
    model, d_in = make(3, dropout=0.3)
    model.train(train)
    x = torch.rand(3, 16, d_in)
    reseed(model)
    base = model(x)
    # other folds' inputs
    other = x.clone()
    other[0] += torch.randn_like(other[0])
    other[2] = 5.0
    reseed(model)                                      # same dropout masks
    assert torch.equal(model(other)[1], base[1])
    assert not torch.allclose(model(other)[0], base[0])
    # other folds' weights
    with torch.no_grad():
        for p in model.parameters():
            p[[0, 2]] += torch.randn_like(p[[0, 2]])
    reseed(model)
    assert torch.equal(model(x)[1], base[1])


def test_fold_loss_gives_no_gradient_to_other_folds():
    model, d_in = make(3, dropout=0.3)
    model.train()
    x = torch.rand(3, 16, d_in, requires_grad=True)
    model(x)[1].pow(2).sum().backward()
    for name, p in model.named_parameters():
        assert p.grad[[0, 2]].abs().max() == 0, name
        assert p.grad[1].abs().max() > 0, name
    assert x.grad[[0, 2]].abs().max() == 0


def test_active_matches_full_forward():
    model, d_in = make(4, dropout=0.3)
    x = torch.rand(4, 12, d_in)
    active = torch.tensor([3, 1])
    model.eval()
    assert torch.allclose(model(x[active], active), model(x)[active], atol=1e-6)
    # in training, each fold's dropout masks do not depend on which folds are active
    model.train()
    reseed(model, 7)
    full = model(x)
    reseed(model, 7)
    assert torch.allclose(model(x[active], active), full[active], atol=1e-6)


def test_single_forward_is_the_fold_model_without_dropout():
    model, d_in = make(3, dropout=0.4)
    x = torch.rand(3, 50, d_in)
    with torch.no_grad():
        full = model.eval()(x)
        model.train()                                  # single_forward never drops out
        for k in range(3):
            assert torch.allclose(single_forward(model, k, x[k]), full[k], atol=1e-6)
            assert torch.allclose(single_forward(model, k, x[k], chunk=7), full[k], atol=1e-6)


def test_shared_images_read_each_picture_once():
    model, d_in = make(2)
    x = torch.rand(2, 6, d_in)
    x[:, :, 1:65] = x[:, ::3, 1:65].repeat_interleave(3, dim=1)   # groups of 3 rows share a picture
    model.eval()
    with torch.no_grad():
        assert torch.allclose(model(x, shared_images=3), model(x), atol=1e-6)
        # eval mode finds the repeats itself: the same as reading every row
        fresh = torch.cat([model(x[:, i:i + 1]) for i in range(6)], dim=1)
        assert torch.allclose(model(x), fresh, atol=1e-6)
        assert torch.allclose(single_forward(model, 1, x[1]), fresh[1], atol=1e-6)
        # a picture that repeats in fold 0 only is not a repeat
        y = x.clone()
        y[1, 1, 1:65] += 0.5
        fresh = torch.cat([model(y[:, i:i + 1]) for i in range(6)], dim=1)
        assert torch.allclose(model(y), fresh, atol=1e-6)
    with pytest.raises(DMLCoreError, match="divide"):
        model(x, shared_images=4)


def digits_problem(seed=0):
    """64 pixel columns in [0, 1] then one extra feature; y = digit value + 2 * extra."""
    digits = load_digits()
    rng = np.random.default_rng(seed)
    extra = rng.normal(size=len(digits.target))
    C = np.column_stack([digits.data / 16.0, extra])
    y = digits.target + 2.0 * extra + 0.1 * rng.normal(size=len(extra))
    return C.astype(np.float32), y.astype(np.float32)


def test_adam_steps_reduce_the_loss_on_digits():
    C, y = digits_problem()
    torch.manual_seed(0)
    K, B = 2, 128
    model = BatchedImageMLP(K, 65, (64, 32), 1, 0.05, torch.Generator().manual_seed(0),
                            image_index=list(range(64)), image_shape=(8, 8))
    x = torch.as_tensor(C)
    t = torch.as_tensor((y - y.mean()) / y.std())[:, None]
    rng = np.random.default_rng(0)
    rows = [rng.permutation(len(y))[:600] for _ in range(K)]      # each fold its own rows
    def evaluate():
        with torch.no_grad():
            return float(((model.eval()(x[np.stack(rows)]) - t[np.stack(rows)]) ** 2).mean())

    before = evaluate()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(30):
        idx = np.stack([rng.choice(r, size=B) for r in rows])
        loss = ((model(x[idx]) - t[idx]) ** 2).mean(dim=(1, 2)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = evaluate()
    print(f"digits loss {before:.3f} -> {after:.3f}")
    assert after < 0.5 * before, (before, after)


def test_train_batched_accepts_the_image_model():
    """train_batched's per-fold clipping and best-state bookkeeping need the fold axis first."""
    C, y = digits_problem()
    C, y = C[:600], y[:600]
    rng = np.random.default_rng(0)
    sets = [np.arange(0, 300), np.arange(300, 600)]
    data = _FoldData(C, y.reshape(-1, 1), sets, 0.2, rng)
    model = BatchedImageMLP(2, 65, (32,), 1, 0.1, torch.Generator().manual_seed(0),
                            image_index=list(range(64)), image_shape=(8, 8))
    params = dict(lr=3e-3, weight_decay=1e-3, batch_size=64, max_epochs=4, patience=1, clip=5.0)
    monitor = Monitor()
    mse = lambda out, t: (out - t).pow(2).mean(dim=-1)
    train_batched(model, data, mse, params, monitor, "s", 0)
    assert not model.training
    for k in range(2):
        history = monitor.histories[("s", k)]
        assert min(history["val"]) < history["val"][0]


REUSE_CHECK = """
import resource, torch
from dmlcore.learners.image import BatchedImageMLP
BatchedImageMLP(2, 66, (8,), 1, 0.1, image_index=list(range(64)), image_shape=(8, 8))
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(8):                             # 200 MB, far above glibc's 32 MB mmap limit
    block = torch.ones(50_000_000)
    del block
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 48_828)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the setting is glibc's")
@pytest.mark.parametrize("keep", ["1", "0"])
def test_building_an_image_network_keeps_freed_memory_for_reuse(keep):
    # a fresh process: in this one, memory freed by earlier tests decides what glibc trims
    env = dict(os.environ, DMLCORE_KEEP_FREED_MEMORY=keep, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", REUSE_CHECK], env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    fresh = float(out.stdout.split()[-1])   # blocks' worth of 4 KiB pages faulted in afresh
    if keep == "1":     # the first block, sometimes the second (memalign padding), then reuse
        assert fresh < 3
    else:               # the opt-out: every block is mapped afresh
        assert fresh > 7


def test_a_bad_keep_freed_memory_setting_is_named(monkeypatch):
    from dmlcore.learners.image import keep_freed_memory

    monkeypatch.setenv("DMLCORE_KEEP_FREED_MEMORY", "no")
    keep_freed_memory.cache_clear()
    try:
        with pytest.raises(DMLCoreError, match=r"DMLCORE_KEEP_FREED_MEMORY must be 1 .* or 0 .*got 'no'"):
            make(2)
    finally:
        keep_freed_memory.cache_clear()
