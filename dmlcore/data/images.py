"""Simulations whose inputs are images (the paper's appendix D.1.2 and D.2.2).

digits-iv: demand-iv (see :mod:`dmlcore.data.simulate`) with the customer type s in 1..7
replaced by a picture of the digit s. The paper uses 28x28 MNIST, which cannot be downloaded
here; we use scikit-learn's bundled 8x8 digits (``load_digits``, 64 pixels scaled to [0, 1]).
The paper picks one random MNIST image per digit class; we draw, for every row, a random image
of its class, so that a model must read the digit rather than memorise seven pictures. The
images of classes 1..7 are split once (the same split for every seed) into a training pool and
a held-out 30 %; the ground truth scores only on held-out images.

dsprites-pcl (Xu et al. 2021, Kompa et al. 2022): the treatment is a 64x64 picture of a heart,
the hidden confounder is its vertical position. The dSprites files cannot be downloaded, so the
heart is drawn by :func:`render_heart`.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import product

import numpy as np
import pandas as pd

from dmlcore.data.roles import CausalData
from dmlcore.data.simulate import (IV_STRENGTH, METRIC_HELP, N, NOISE_SCALE, RHO, Y_STD, GroundTruth, Simulation,
                                   _check_n, _demand_iv_draw,
                                   check_noise_scale, demand_f0, demand_iv_grid)
from dmlcore.errors import DMLCoreError
from dmlcore.stats.resample import SEED


def pixel_names(count: int) -> list[str]:
    """``pixel_00`` .. for ``count`` pixels, zero-padded to a common width."""
    width = len(str(count - 1))
    return [f"pixel_{i:0{width}d}" for i in range(count)]


def _table(columns: dict, pixels: np.ndarray, names: list[str]) -> pd.DataFrame:
    """One frame from scalar columns and a pixel block, without per-column inserts."""
    return pd.concat([pd.DataFrame(columns), pd.DataFrame(pixels, columns=names)], axis=1)


# ------------------------------------------------------------------ digits-iv
DIGIT_SHAPE = (8, 8)
DIGIT_COLUMNS = pixel_names(64)
DIGIT_TYPES = tuple(range(1, 8))
HELDOUT_FRACTION = 0.3


@lru_cache(maxsize=1)
def digit_pools() -> tuple[dict, dict]:
    """Training and held-out images of the digits 1..7, as ``{digit: (k, 64) array}``.

    Pixels are scaled from 0..16 to [0, 1]; the split is fixed (seed 20240) and stratified.
    """
    # late: sklearn.datasets (and the text tools it pulls in) is wanted only for the digits design, not by every
    # process that imports dmlcore (tests/test_cli_imports.py)
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = digits.data / 16.0
    rng = np.random.default_rng(20240)
    train, held = {}, {}
    for s in DIGIT_TYPES:
        rows = rng.permutation(np.flatnonzero(digits.target == s))
        cut = int(round(HELDOUT_FRACTION * len(rows)))
        held[s], train[s] = images[rows[:cut]], images[rows[cut:]]
        held[s].flags.writeable = train[s].flags.writeable = False
    return train, held


def _digit_images(types, pool: dict, rng) -> np.ndarray:
    """For each entry of ``types``, a random image of that digit from ``pool``."""
    types = np.asarray(types).astype(int)
    out = np.empty((len(types), 64))
    for s, images in pool.items():
        rows = np.flatnonzero(types == s)
        out[rows] = images[rng.integers(len(images), size=len(rows))]
    return out


DIGITS_IV_OPTIONS = (N, RHO, IV_STRENGTH, NOISE_SCALE)       # demand-iv's, but ood_test (dmlcore.data.options)
DSPRITES_PCL_OPTIONS = (N,)


def simulate_digits_iv(n: int = N.default, seed: int = SEED, rho: float = RHO.default,
                       iv_strength: float = IV_STRENGTH.default, noise_scale: str = NOISE_SCALE.default) -> Simulation:
    """IV ticket demand whose customer type is seen only as an 8x8 digit image.

    The rows are those of ``simulate_demand_iv(n, seed, rho, iv_strength, noise_scale=...)`` (same draws), with
    ``customer_type`` replaced by a random training image of that digit in ``pixel_00..63``.
    Scored like demand-iv, on the 2,800-point grid and on 10,000 fresh draws, each point with a
    random held-out image of its type: MSE of f-hat vs f0 on the scale (y + 292.1) / 158.
    """
    _check_n(n)
    if not 0.0 <= rho < 1.0:
        raise DMLCoreError(f"rho must be in [0, 1); got {rho}.")
    if not np.isfinite(iv_strength):
        raise DMLCoreError(f"iv_strength must be a finite number; got {iv_strength}.")
    check_noise_scale(noise_scale)
    train_pool, held_pool = digit_pools()
    rng = np.random.default_rng(seed)
    rows = _demand_iv_draw(n, rng, rho, iv_strength, noise_scale=noise_scale)
    table = _table({c: rows[c].to_numpy() for c in ("sales", "price", "time", "fuel_price")},
                   _digit_images(rows["customer_type"], train_pool, rng), DIGIT_COLUMNS)
    data = CausalData(table, "iv", outcome="sales", treatment="price", instrument="fuel_price",
                      covariates=["time", *DIGIT_COLUMNS], name="digits-iv",
                      image_columns=DIGIT_COLUMNS, image_shape=DIGIT_SHAPE)

    def held_out(frame, rng):
        """True f0 and model inputs of scoring points, each with a held-out image of its digit."""
        f0 = demand_f0(frame["price"], frame["time"], frame["customer_type"]).to_numpy()
        images = _digit_images(frame["customer_type"], held_pool, rng)
        return f0, _table({c: frame[c].to_numpy() for c in ("price", "time")}, images, DIGIT_COLUMNS)

    grid = held_out(demand_iv_grid(), np.random.default_rng([seed, 20_002]))
    fresh = held_out(_demand_iv_draw(10_000, np.random.default_rng([seed, 10_001]), rho, iv_strength,
                                     noise_scale=noise_scale),
                     np.random.default_rng([seed, 10_002]))
    cols = data.input_columns

    def scaled_mse(model, points):
        f0, inputs = points
        est = np.asarray(model.predict(inputs[cols]), dtype=float).ravel()
        return float(np.mean(((est - f0) / Y_STD) ** 2))

    def score(model):
        return {"mse": scaled_mse(model, grid), "mse_fresh": scaled_mse(model, fresh)}

    def curve(model):
        # f against price at the median time, for the first held-out image of each digit
        prices = np.linspace(10, 25, 60)
        frames = []
        for s in DIGIT_TYPES:
            frame = pd.DataFrame({"price": prices, "time": 5.0})
            inputs = _table(frame, np.repeat(held_pool[s][:1], len(prices), axis=0), DIGIT_COLUMNS)
            frames.append(pd.DataFrame({
                "x": prices, "price": prices, "time": 5.0,
                "estimate": np.asarray(model.predict(inputs[cols]), dtype=float).ravel(),
                "truth": demand_f0(prices, 5.0, s), "group": f"digit {s}"}))
        return pd.concat(frames, ignore_index=True)

    truth = GroundTruth("iv", score, curve,
                        "MSE of f-hat vs f0 on the 2,800-point grid with held-out digit images, "
                        "outcome scaled (y + 292.1)/158", metric_help=METRIC_HELP)
    return Simulation(data, truth, dict(dataset="digits-iv", n=n, seed=seed, rho=rho,
                                        iv_strength=iv_strength, noise_scale=noise_scale))


# --------------------------------------------------------------- dsprites-pcl
SPRITE_SHAPE = (64, 64)
SPRITE_COLUMNS = pixel_names(64 * 64)
SCALES = np.linspace(0.5, 1.0, 6)
POSITIONS = np.linspace(0.0, 1.0, 32)
HEART_UNIT = 9.0          # pixels per unit of the heart curve at scale 1
HEART_CENTROID = 0.29348  # height of the area centroid of the heart region
MARGIN, TRAVEL = 12.0, 40.0
_CHUNK = 512


def render_heart(scale, rotation, pos_x, pos_y) -> np.ndarray:
    """Binary 64x64 pictures of the dSprites heart, drawn from its latent factors.

    The heart is the region (u² + v² - 1)³ - u² v³ <= 0 (lobes up, tip down), shifted so that
    its area centroid is the origin, scaled to ``9 * scale`` pixels per unit (so about 20
    pixels wide at scale 1 and 10 at scale 0.5), turned counter-clockwise by ``rotation``
    radians about its centroid, and placed with its centroid at column ``12 + 40 * pos_x`` and
    row ``12 + 40 * pos_y`` (row 0 at the top): a heart of scale <= 1 stays inside the frame
    for positions in [0, 1]. A pixel is on when its centre lies in the region.

    Parameters
    ----------
    scale, rotation, pos_x, pos_y : float or array-like, broadcast together
        dSprites uses scale in {0.5, 0.6, ..., 1}, rotation in [0, 2 pi), positions on 32
        points of [0, 1]; any finite values with scale > 0 are drawn.

    Returns
    -------
    numpy.ndarray of float32 zeros and ones, shape ``broadcast shape + (64, 64)``.
    """
    factors = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (scale, rotation, pos_x, pos_y)))
    if not all(np.isfinite(f).all() for f in factors):
        raise DMLCoreError("render_heart needs finite scale, rotation, pos_x and pos_y.")
    if (factors[0] <= 0).any():
        raise DMLCoreError(f"scale must be positive; got {factors[0].min()}.")
    shape = factors[0].shape
    flat = [f.ravel() for f in factors]
    out = np.zeros((len(flat[0]),) + SPRITE_SHAPE, dtype=np.float32)
    for start in range(0, len(out), _CHUNK):
        _draw_hearts(out[start:start + _CHUNK], *(f[start:start + _CHUNK] for f in flat))
    return out.reshape(shape + SPRITE_SHAPE)


def _draw_hearts(out, scale, rotation, pos_x, pos_y):
    """Set the pixels of each heart in ``out`` (k, 64, 64), looking only near its centre."""
    cx, cy, unit = MARGIN + TRAVEL * pos_x, MARGIN + TRAVEL * pos_y, HEART_UNIT * scale
    half = int(np.ceil(1.3 * unit.max())) + 1      # the heart lies within 1.294 units of its centroid
    offsets = np.arange(-half, half + 1)
    rows = np.floor(cy).astype(int)[:, None] + offsets           # (k, w)
    cols = np.floor(cx).astype(int)[:, None] + offsets
    dx = ((cols + 0.5 - cx[:, None]) / unit[:, None]).astype(np.float32)[:, None, :]
    dy = ((cy[:, None] - rows - 0.5) / unit[:, None]).astype(np.float32)[:, :, None]
    cos = np.cos(rotation).astype(np.float32)[:, None, None]
    sin = np.sin(rotation).astype(np.float32)[:, None, None]
    u = cos * dx + sin * dy
    v = cos * dy - sin * dx + np.float32(HEART_CENTROID)
    u2 = u * u
    q = u2 + v * v - 1.0
    inside = q * q * q <= u2 * v * v * v
    inside &= ((rows >= 0) & (rows < 64))[:, :, None] & ((cols >= 0) & (cols < 64))[:, None, :]
    k, r, c = np.nonzero(inside)
    out[k, rows[k, r], cols[k, c]] = 1.0


_COLUMN_WEIGHTS = np.abs(32.0 - np.arange(1, 65)) / 32.0     # B_ij = |32 - j| / 32, j = 1..64


def dsprites_structural(images) -> np.ndarray:
    """f(a) = (0.1 ||a B||² - 5000) / 1000 for images a of shape (..., 64, 64) or (..., 4096).

    The paper writes ||vec(A)^T B||² with B in R^{64x64}, B_ij = |32 - j| / 32; the sizes agree
    only for the matrix product A B of the 64x64 image, whose squared Frobenius norm is
    ||w||² * sum_i (sum_j A_ij)² with w_j = |32 - j| / 32. It grows with the scale and changes
    with the rotation; over the training design it ranges from about -4 to 6 (median near 0).
    """
    a = np.asarray(images, dtype=float)
    a = a.reshape(a.shape[:-1] + SPRITE_SHAPE) if a.shape[-1] == 64 * 64 else a
    row_sums = a.sum(axis=-1)
    return (0.1 * np.sum(row_sums ** 2, axis=-1) * np.sum(_COLUMN_WEIGHTS ** 2) - 5000.0) / 1000.0


def confounder_weight(u) -> np.ndarray:
    """(31 u - 15.5)² / 85.25, the factor of the hidden posY = u in the outcome."""
    return (31.0 * np.asarray(u, dtype=float) - 15.5) ** 2 / 85.25


def dsprites_test_grid() -> pd.DataFrame:
    """The 588 test sprites: posX, posY on 0, 5, .., 30 of 32, scale 0.5/0.8/1, 4 right angles."""
    spots = POSITIONS[::5]
    grid = np.array(list(product(spots, spots, [0.5, 0.8, 1.0], np.arange(4) * np.pi / 2)))
    return pd.DataFrame(grid, columns=["pos_x", "pos_y", "scale", "rotation"])


def _draw_dsprites(n, rng):
    scale = rng.choice(SCALES, size=n)
    rotation = rng.uniform(0.0, 2.0 * np.pi, size=n)
    pos_x = POSITIONS[rng.integers(32, size=n)]
    pos_y = POSITIONS[rng.integers(32, size=n)]                   # U, the hidden confounder
    image = render_heart(scale, rotation, pos_x, pos_y).reshape(n, -1)
    image += 0.1 * rng.standard_normal(image.shape, dtype=np.float32)    # A
    proxy = pos_y + rng.normal(0.0, 1.0, size=n)                  # W
    outcome = dsprites_structural(image) * confounder_weight(pos_y) + rng.normal(0.0, 0.5, size=n)
    scalars = {"outcome": outcome, "scale": scale, "rotation": rotation, "pos_x": pos_x,
               "pos_y_proxy": proxy}
    return _table(scalars, image, SPRITE_COLUMNS)


def simulate_dsprites_pcl(n: int = N.default, seed: int = SEED) -> Simulation:
    """Proximal causal learning with a 64x64 image as the treatment (paper's appendix D.2.2).

    scale ~ Unif{0.5, 0.6, .., 1}, rotation ~ Unif(0, 2 pi), posX, posY ~ Unif on 32 points of
    [0, 1]; U = posY (hidden); V = (scale, rotation, posX) the treatment proxies; A = the heart
    picture (:func:`render_heart`) + N(0, 0.1²) per pixel, in ``pixel_0000..4095`` (float32);
    W = posY + N(0, 1) the outcome proxy ``pos_y_proxy``;
    Y = f(A) (31 U - 15.5)² / 85.25 + N(0, 0.5²) with f = :func:`dsprites_structural`.

    Truth: E[Y | do(a)] = f(a) E[(31 U - 15.5)² / 85.25] = f(a), since the mean of (k - 15.5)²
    over k = 0..31 is 85.25; it is computed for each noiseless picture of the 588-sprite test grid
    (:func:`dsprites_test_grid`). The estimate for a picture a is the mean over the training W of
    the bridge h(a, w); the score is their MSE on the raw outcome scale.

    As written in the paper, posY is on [0, 1] (the scale its Y formula needs), so W is a weak
    proxy (correlation with U about 0.29). The authors' code differs: there W is a noisy heart
    picture at posY (or the posY index 0..31 without noise) and f uses a random 4096x10 matrix.
    """
    _check_n(n)
    table = _draw_dsprites(n, np.random.default_rng(seed))
    data = CausalData(table, "pcl", outcome="outcome", treatment=SPRITE_COLUMNS,
                      treatment_proxy=["scale", "rotation", "pos_x"], outcome_proxy="pos_y_proxy",
                      name="dsprites-pcl", image_columns=SPRITE_COLUMNS, image_shape=SPRITE_SHAPE)
    grid = dsprites_test_grid()
    images = render_heart(grid["scale"], grid["rotation"], grid["pos_x"], grid["pos_y"])
    images = images.reshape(len(grid), -1)
    true = dsprites_structural(images) * float(np.mean(confounder_weight(POSITIONS)))

    def score(model):
        return {"mse": float(np.mean((image_bridge_means(model, data, images) - true) ** 2))}

    def curve(model):
        # test sprites ordered by their true effect
        order = np.argsort(true, kind="stable")
        out = grid.iloc[order].reset_index(drop=True)
        out["x"] = np.arange(len(out))
        out["estimate"] = image_bridge_means(model, data, images[order])
        out["truth"] = true[order]
        out["group"] = "scale " + out["scale"].map("{:.1f}".format)
        return out

    truth = GroundTruth("pcl", score, curve,
                        "MSE of E[Y|do(a)] over the 588 test sprites, raw outcome scale")
    return Simulation(data, truth, dict(dataset="dsprites-pcl", n=n, seed=seed))


def image_bridge_means(model, data: CausalData, images: np.ndarray,
                       max_rows: int = 10_000) -> np.ndarray:
    """Mean over the rows of ``data`` of h(a, W, X), for each image a (a row of ``images``).

    The model sees frames of ``data.input_columns`` (the treatment pixels, then the other
    inputs) of at most about ``max_rows`` rows, all in float32, the pixels' type.
    """
    other = data.input_columns[len(data.treatment):]
    base = data.table[other].to_numpy(dtype=np.float32)
    n = len(base)
    per_call = max(1, max_rows // n)
    width = len(data.treatment)
    buffer = np.empty((min(per_call, len(images)), n, len(data.input_columns)), dtype=np.float32)
    buffer[:, :, width:] = base                     # the same for every image: filled once
    out = np.empty(len(images))
    for start in range(0, len(images), per_call):
        block = images[start:start + per_call]
        rows = buffer[:len(block)]
        rows[:, :, :width] = block[:, None, :]
        frame = pd.DataFrame(rows.reshape(-1, rows.shape[-1]), columns=data.input_columns, copy=False)
        pred = np.asarray(model.predict(frame), dtype=float).ravel()
        out[start:start + len(block)] = pred.reshape(len(block), n).mean(axis=1)
    return out
