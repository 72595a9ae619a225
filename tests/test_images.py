import time

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_digits

from dmlcore.data.images import (DIGIT_COLUMNS, POSITIONS, SPRITE_COLUMNS, confounder_weight,
                                 digit_pools, dsprites_structural, dsprites_test_grid,
                                 image_bridge_means, render_heart, simulate_digits_iv,
                                 simulate_dsprites_pcl)
from dmlcore.data.simulate import demand_f0, simulate_demand_iv
from dmlcore.errors import DMLCoreError


def _label_of():
    """Digit label of any bundled 8x8 image, keyed by its pixels scaled to [0, 1]."""
    digits = load_digits()
    return {(img / 16.0).tobytes(): int(t) for img, t in zip(digits.data, digits.target)}


class DigitOracle:
    """f0 with the customer type read off the image."""

    def __init__(self):
        self.labels = _label_of()

    def predict(self, frame):
        pixels = frame[DIGIT_COLUMNS].to_numpy(dtype=float)
        types = np.array([self.labels[row.tobytes()] for row in pixels], dtype=float)
        return demand_f0(frame["price"].to_numpy(), frame["time"].to_numpy(), types)


# ------------------------------------------------------------------ digits-iv
def test_digits_iv_table_and_roles():
    sim = simulate_digits_iv(n=300, seed=1)
    data = sim.data
    assert data.table.shape == (300, 4 + 64)
    assert data.problem == "iv" and data.image_shape == (8, 8)
    assert data.image_columns == DIGIT_COLUMNS == [f"pixel_{i:02d}" for i in range(64)]
    assert data.input_columns == ["price", "time", *DIGIT_COLUMNS]
    assert data.conditioning_columns == ["fuel_price", "time", *DIGIT_COLUMNS]
    assert "customer_type" not in data.table.columns
    pixels = data.table[DIGIT_COLUMNS].to_numpy()
    assert pixels.dtype == np.float64 and pixels.min() >= 0.0 and pixels.max() <= 1.0


def test_digits_iv_rows_are_demand_iv_rows_with_images_of_their_type():
    sim = simulate_digits_iv(n=400, seed=3)
    ref = simulate_demand_iv(n=400, seed=3).data.table
    table = sim.data.table
    for col in ("sales", "price", "time", "fuel_price"):
        np.testing.assert_array_equal(table[col], ref[col])
    labels = _label_of()
    seen = [labels[row.tobytes()] for row in table[DIGIT_COLUMNS].to_numpy()]
    np.testing.assert_array_equal(seen, ref["customer_type"].astype(int))
    held = {img.tobytes() for pool in digit_pools()[1].values() for img in pool}
    assert not any(row.tobytes() in held for row in table[DIGIT_COLUMNS].to_numpy())


def test_digits_iv_truth_is_f0_of_the_digit_label():
    sim = simulate_digits_iv(n=200, seed=0)
    assert sim.truth.score(DigitOracle()) == {"mse": 0.0, "mse_fresh": 0.0}

    class Zero:
        def predict(self, frame):
            return np.zeros(len(frame))

    scores = sim.truth.score(Zero())
    grid_f0 = demand_f0(*np.meshgrid(np.linspace(10, 25, 20), np.linspace(0, 10, 20), np.arange(1, 8),
                                     indexing="ij"))
    assert scores["mse"] == pytest.approx(np.mean((grid_f0 / 158.0) ** 2))
    curve = sim.truth.curve(DigitOracle())
    assert {"x", "estimate", "truth", "group"} <= set(curve.columns)
    assert curve["group"].nunique() == 7
    np.testing.assert_allclose(curve["estimate"], curve["truth"])


def test_digits_iv_determinism_and_errors():
    a, b = simulate_digits_iv(n=50, seed=7).data.table, simulate_digits_iv(n=50, seed=7).data.table
    pd.testing.assert_frame_equal(a, b)
    assert not simulate_digits_iv(n=50, seed=8).data.table.equals(a)
    with pytest.raises(DMLCoreError, match="n must be an integer"):
        simulate_digits_iv(n=5)
    with pytest.raises(DMLCoreError, match="rho"):
        simulate_digits_iv(n=50, rho=1.0)


# -------------------------------------------------------------- render_heart
def _centroid(image):
    rows, cols = np.nonzero(image)
    return rows.mean(), cols.mean()


def test_render_heart_shapes_and_values():
    one = render_heart(1.0, 0.0, 0.5, 0.5)
    assert one.shape == (64, 64) and one.dtype == np.float32
    assert set(np.unique(one)) == {0.0, 1.0}
    many = render_heart(np.full((2, 3), 0.7), 0.3, 0.2, [0.1, 0.5, 0.9])
    assert many.shape == (2, 3, 64, 64)
    np.testing.assert_array_equal(many[1, 2], render_heart(0.7, 0.3, 0.2, 0.9))


def test_render_heart_follows_its_latent_factors():
    for pos in (0.0, 0.5, 1.0):
        row, col = _centroid(render_heart(0.8, 1.0, pos, 1.0 - pos))
        assert col == pytest.approx(12 + 40 * pos - 0.5, abs=0.5)
        assert row == pytest.approx(12 + 40 * (1.0 - pos) - 0.5, abs=0.5)
    areas = render_heart(np.linspace(0.5, 1.0, 6), 0.4, 0.5, 0.5).sum(axis=(1, 2))
    assert np.all(np.diff(areas) > 0)
    assert areas[-1] / areas[0] == pytest.approx(4.0, rel=0.1)
    base = render_heart(1.0, 0.0, 0.5, 0.5)
    assert np.abs(render_heart(1.0, np.pi / 3, 0.5, 0.5) - base).sum() > 20
    np.testing.assert_array_equal(render_heart(1.0, 2 * np.pi, 0.5, 0.5), base)
    upright = _centroid(base)
    rows = np.nonzero(base)[0]
    assert rows.max() - upright[0] > upright[0] - rows.min()          # the tip points down


def test_render_heart_is_fast_and_checks_its_input():
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    render_heart(rng.choice([0.5, 1.0], 5000), rng.uniform(0, 6.3, 5000), rng.random(5000), rng.random(5000))
    assert time.perf_counter() - start < 1.5
    with pytest.raises(DMLCoreError, match="scale must be positive"):
        render_heart(0.0, 0.0, 0.5, 0.5)
    with pytest.raises(DMLCoreError, match="finite"):
        render_heart(1.0, np.nan, 0.5, 0.5)


# ---------------------------------------------------------------- dsprites-pcl
def test_dsprites_pcl_table_and_roles():
    data = simulate_dsprites_pcl(n=60, seed=0).data
    assert data.table.shape == (60, 5 + 4096)
    assert data.problem == "pcl" and data.image_shape == (64, 64)
    assert data.treatment == data.image_columns == SPRITE_COLUMNS
    assert SPRITE_COLUMNS[0] == "pixel_0000" and SPRITE_COLUMNS[-1] == "pixel_4095"
    assert data.treatment_proxy == ["scale", "rotation", "pos_x"]
    assert data.outcome_proxy == ["pos_y_proxy"] and data.outcome == "outcome"
    assert (data.table[SPRITE_COLUMNS].dtypes == np.float32).all()
    assert data.input_columns == [*SPRITE_COLUMNS, "pos_y_proxy"]
    assert set(data.table["scale"]) <= set(np.round(np.linspace(0.5, 1.0, 6), 12))
    assert data.table["rotation"].between(0, 2 * np.pi).all()


def test_dsprites_pcl_follows_the_structural_equations():
    table = simulate_dsprites_pcl(n=120, seed=4).data.table
    noisy = table[SPRITE_COLUMNS].to_numpy()
    clean = np.round(noisy).clip(0, 1)
    assert np.std(noisy - clean) == pytest.approx(0.1, rel=0.05)
    # recover the hidden posY: the one position whose sprite is the clean picture
    candidates = render_heart(table["scale"].to_numpy()[:, None], table["rotation"].to_numpy()[:, None],
                              table["pos_x"].to_numpy()[:, None], POSITIONS[None, :]).reshape(120, 32, -1)
    match = (candidates == clean[:, None, :]).all(axis=2)
    assert (match.sum(axis=1) == 1).all()
    pos_y = POSITIONS[match.argmax(axis=1)]
    assert np.std(table["pos_y_proxy"] - pos_y) == pytest.approx(1.0, rel=0.2)
    residual = table["outcome"] - dsprites_structural(noisy) * confounder_weight(pos_y)
    assert np.std(residual) == pytest.approx(0.5, rel=0.2)


def test_dsprites_truth_on_the_test_grid():
    grid = dsprites_test_grid()
    assert len(grid) == 588 and grid.drop_duplicates().shape[0] == 588
    assert sorted(grid["rotation"].unique()) == pytest.approx([0, np.pi / 2, np.pi, 3 * np.pi / 2])
    assert np.mean(confounder_weight(POSITIONS)) == pytest.approx(1.0)
    sim = simulate_dsprites_pcl(n=40, seed=1)

    class Bridge:
        """h(a, w) = f(a): the bridge when W carries no information."""

        def predict(self, frame):
            return dsprites_structural(frame[SPRITE_COLUMNS].to_numpy())

    assert sim.truth.score(Bridge())["mse"] == pytest.approx(0.0, abs=1e-9)
    curve = sim.truth.curve(Bridge())
    assert len(curve) == 588 and {"x", "estimate", "truth", "group"} <= set(curve.columns)
    assert curve["truth"].is_monotonic_increasing
    images = render_heart(grid["scale"], grid["rotation"], grid["pos_x"], grid["pos_y"])
    assert sorted(curve["truth"]) == pytest.approx(sorted(dsprites_structural(images)))


def test_bridge_means_average_over_the_training_proxy():
    data = simulate_dsprites_pcl(n=30, seed=2).data

    class ProxyOnly:
        def predict(self, frame):
            assert list(frame.columns) == data.input_columns
            return frame["pos_y_proxy"].to_numpy() + frame["pixel_0000"].to_numpy()

    images = np.zeros((5, 4096), dtype=np.float32)
    images[:, 0] = np.arange(5)
    means = image_bridge_means(ProxyOnly(), data, images, max_rows=70)
    expected = np.arange(5) + data.table["pos_y_proxy"].astype(np.float32).mean()
    np.testing.assert_allclose(means, expected, rtol=1e-5)


def test_dsprites_determinism_and_errors():
    a, b = simulate_dsprites_pcl(n=25, seed=3).data.table, simulate_dsprites_pcl(n=25, seed=3).data.table
    pd.testing.assert_frame_equal(a, b)
    assert not simulate_dsprites_pcl(n=25, seed=4).data.table.equals(a)
    with pytest.raises(DMLCoreError, match="n must be an integer"):
        simulate_dsprites_pcl(n=3)
