"""The random-direction kernel change of chapter 2 (ntkbook.experiments.random_direction) against
closed forms computed with numpy from the same draws."""

import jax
import numpy as np
import pytest

import ntkbook as nb
from ntkbook.experiments import random_direction as rd


@pytest.fixture(scope="module")
def small_table():
    cfg = nb.scales.get("random_direction", "ci").replace(widths=(16, 64), seeds=5)
    return cfg, nb.sweep.run(rd.RANDOM_DIRECTION, cfg, show_progress=False)


def _draws(cfg, activation, width):
    """The (w₀, u) draws of one piece, regenerated from its key as the piece does."""
    key = nb.sweep.piece_key("random_direction", {"activation": activation, "width": width})
    with jax.enable_x64(True):
        _, k_w, k_u = jax.random.split(key, 3)
        w0 = np.asarray(jax.random.normal(k_w, (cfg.seeds, width, 1), np.float64))[..., 0]
        g = np.asarray(jax.random.normal(k_u, (cfg.seeds, width, 1), np.float64))[..., 0]
    return w0, g / np.linalg.norm(g, axis=1, keepdims=True)


def test_relu_change_counts_crossings(small_table):
    cfg, table = small_table
    for width in cfg.widths:
        rows = table[(table["activation"] == "relu") & (table["width"] == width)]
        w0, u = _draws(cfg, "relu", width)
        w1 = w0 + cfg.radius * u
        x = cfg.x
        k0 = x**2 * (w0 * x > 0).sum(axis=1) / width
        dk = x**2 * ((w1 * x > 0).sum(axis=1) - (w0 * x > 0).sum(axis=1)) / width
        np.testing.assert_allclose(rows["K(w₀)"], k0, rtol=0, atol=1e-12)
        np.testing.assert_allclose(rows["ΔK"], dk, rtol=0, atol=1e-12)


def test_tanh_kernel_is_eq10_sum(small_table):
    cfg, table = small_table
    width = cfg.widths[-1]
    rows = table[(table["activation"] == "tanh") & (table["width"] == width)]
    w0, u = _draws(cfg, "tanh", width)
    x = cfg.x

    def kernel(w):
        return x**2 * np.mean((1 - np.tanh(w * x) ** 2) ** 2, axis=1)

    np.testing.assert_allclose(rows["K(w₀)"], kernel(w0), rtol=1e-12)
    np.testing.assert_allclose(rows["ΔK"], kernel(w0 + cfg.radius * u) - kernel(w0), rtol=1e-9, atol=1e-14)


def test_rms_by_width_and_prediction(small_table):
    _, table = small_table
    rms = rd.rms_by_width(table)
    sel = table[(table["activation"] == "relu") & (table["width"] == 16)]
    row = rms[(rms["activation"] == "relu") & (rms["width"] == 16)]
    assert float(row["rms ΔK"].iloc[0]) == pytest.approx(np.sqrt(np.mean(sel["ΔK"] ** 2)), rel=1e-12)
    assert int(row["seeds"].iloc[0]) == len(sel)
    assert rd.relu_rms_prediction(16, 1.0, 1.0) == pytest.approx(np.sqrt(1 / np.pi) / 8)
