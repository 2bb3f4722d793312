"""Chapter 5: ntkbook.experiments.breaking_linearity and optimization_without_linearity."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import norm

from ntkbook import scales
from ntkbook.experiments import breaking_linearity as bl
from ntkbook.experiments import optimization_without_linearity as ow
from ntkbook.fitting import PowerLawFit
from ntkbook.hessian import dense_spectral_norm
from ntkbook.models.dense import mlp
from ntkbook.models.output_maps import PHI, PHI_FLOOR, phi_derivatives

# ---------------------------------------------------------------------------------------------
# Non-linear output
# ---------------------------------------------------------------------------------------------


def test_phi_closed_forms(x64):
    z = jnp.linspace(-30, 30, 601, dtype=jnp.float64)
    np.testing.assert_allclose(PHI(z), z + 0.5 * np.log(np.cosh(np.asarray(z))), rtol=1e-12, atol=1e-12)
    d1, d2 = phi_derivatives(PHI, z)
    np.testing.assert_allclose(d1, 1 + 0.5 * np.tanh(np.asarray(z)), rtol=1e-12)
    # (far in the tails autodiff computes 1 − tanh² by cancellation: absolute accuracy only)
    np.testing.assert_allclose(d2, 0.5 / np.cosh(np.asarray(z)) ** 2, rtol=1e-10, atol=1e-15)
    assert float(d1.min()) >= PHI_FLOOR and float(d1.max()) <= PHI.lipschitz
    assert float(d2.max()) <= PHI.smoothness


def test_one_layer_hessian_norm_against_dense(x64):
    model, params = mlp(jax.random.key(0), 9, input_dim=2, dtype=jnp.float64)
    x = jax.random.normal(jax.random.key(1), (3, 2), jnp.float64)
    closed = bl.one_layer_hessian_norm(model, params, x)
    for i in range(3):
        dense = dense_spectral_norm(lambda p, xi=x[i]: model.apply(p, xi[None])[0], params)
        np.testing.assert_allclose(closed[i], dense, rtol=1e-10)
    deep, dp = mlp(jax.random.key(2), (4, 4), input_dim=2)
    with pytest.raises(TypeError, match="one hidden"):
        bl.one_layer_hessian_norm(deep, dp, x)


def test_hessian_decompositions():
    dense = bl.hessian_decomposition_dense(jax.random.key(3), width=8)
    assert dense["eq28_max_rel_error"] < 1e-12 and dense["eq27_max_rel_error"] < 1e-12
    assert dense["worst_eq29_margin"] >= 0
    hvp = bl.hessian_decomposition_hvp(jax.random.key(4), width=50, probes=2)
    assert hvp["max_rel_error"] < 1e-12 and hvp["probes"] == 12


def test_nonlinear_output_sweep_small():
    cfg = scales.get("breaking_nonlinear_output", "ci").replace(widths=(16,), seeds=2, num_inputs=6, radius=3.0,
                                                                steps=150, lr_factor=1.0, lanczos_steps=12)
    at_init, runs = bl.nonlinear_output_sweep(cfg, jax.random.key(5))
    assert at_init["width"].shape == (12,) and runs["width"].shape == (2,)
    assert np.all(at_init["hessian_tilde"] * (1 + 1e-4) >= at_init["eq29_bound"])  # Eq. (29)
    # Weyl: |‖H̃‖ − |φ''|K| ≤ |φ'|‖H‖
    gap = np.abs(at_init["hessian_tilde"] - np.abs(at_init["phi2"]) * at_init["kernel"])
    assert np.all(gap <= np.abs(at_init["phi1"]) * at_init["hessian"] + 1e-4 * at_init["hessian_tilde"])
    assert np.all(runs["kernel_change_tilde"] > 0)


# ---------------------------------------------------------------------------------------------
# Bottleneck
# ---------------------------------------------------------------------------------------------


def test_eq30_tensor_and_limit():
    w = jax.random.normal(jax.random.key(6), (20,))
    act = bl.get_activation("tanh")
    t = bl.eq30_tensor(w, 0.7, act)
    assert t.shape == (1, 1, 20)
    np.testing.assert_allclose(t.ravel(), np.asarray(w) ** 2 * np.asarray(act.derivative(w * 0.7, 2)), rtol=1e-5)
    mean, sd = bl.eq30_limit(bl.get_activation("quadratic"), 0.7)
    assert mean == pytest.approx(1.0) and sd == pytest.approx(math.sqrt(2.0))  # E w² = 1, Var w² = 2
    e = bl.eq30_sweep(scales.get("breaking_eq30", "ci").replace(widths=(10, 40), seeds=1, activations=("quadratic",),
                                                                  alpha=0.5), jax.random.key(7))
    assert e["exact"].all()
    np.testing.assert_allclose(e["norm_221"], e["closed_form"], rtol=1e-5)


def test_bottleneck_network_is_eq31(x64):
    model, params = bl.bottleneck_network(jax.random.key(8), 7, dtype=jnp.float64)
    w1 = np.asarray(params["layers"][0]["W"][:, 0])
    w2 = np.asarray(params["layers"][1]["W"][0])
    w3 = np.asarray(params["layers"][2]["W"][:, 0])
    w4 = np.asarray(params["v"][:, 0])
    x = 1.3
    inner = np.sum(w2 * 0.5 * (w1 * x) ** 2) / math.sqrt(7)
    expected = np.sum(w4 * 0.5 * (w3 * inner) ** 2) / math.sqrt(7)
    np.testing.assert_allclose(model.apply(params, jnp.asarray([x]))[0], expected, rtol=1e-12)


def test_hessian_block_check():
    res = bl.hessian_block_check(jax.random.key(9), width=10)
    assert res["eq108_rel_error"] < 1e-12 and res["eq109_rel_error"] < 1e-12
    assert res["homogeneity_rel_error"] < 1e-12 and res["full_over_block"] >= 1.0


def test_theorem_4_1_bound_and_constants():
    # R = 0: (√3/16) C₁ δ³ x⁴; R > 0 with m → ∞ tends to it
    assert bl.theorem_4_1_bound(0.2, 2.0, 1.5) == pytest.approx(math.sqrt(3) / 16 * 2.0 * 0.008 * 1.5**4)
    assert bl.theorem_4_1_bound(0.2, 2.0, 1.5, radius=1.0, width=10**12) == pytest.approx(
        bl.theorem_4_1_bound(0.2, 2.0, 1.5), rel=1e-3)
    with pytest.raises(ValueError, match="width"):
        bl.theorem_4_1_bound(0.2, 2.0, 1.0, radius=1.0)
    deltas = np.array([0.1, 0.3, 0.45])
    expected = min(12 * norm.ppf((1 + 2 * d) / 2) / d**3 for d in deltas)
    assert bl.gaussian_limit_c1(deltas) == pytest.approx(expected)
    with pytest.raises(ValueError, match="deltas"):
        bl.gaussian_limit_c1([0.6])
    # synthetic blocks: half the initializations at 0, half at a large value
    sweep = {"widths": np.array([10**6]), "block": np.array([[0.0] * 50 + [1e6] * 50])}
    c = bl.theorem_4_1_constants(sweep, deltas, 1.0, 1.0)
    np.testing.assert_allclose(c["failure"], [[0.5, 0.5, 0.5]])
    np.testing.assert_allclose(c["allowed"], [2 * deltas], atol=1e-12)
    assert c["c1_empirical"][0] == 0.0  # the 0.2-quantile is 0
    sw = bl.theorem_4_1_sweep(scales.get("breaking_theorem_4_1", "ci").replace(widths=(8, 32), seeds=16, x=1.0),
                              jax.random.key(10))
    assert sw["block"].shape == (2, 16)
    np.testing.assert_allclose(sw["block"], 0.25 * sw["w1_fourth"] * np.abs(sw["S_over_sqrt_m"]), rtol=1e-5)


def test_bottleneck_ball_sweep_small():
    b = bl.bottleneck_ball_sweep(scales.get("breaking_bottleneck_ball", "ci").replace(
        widths=(8,), seeds=2, x=1.0, radius=1.0, lanczos_steps=16),
                                 jax.random.key(11))
    assert b["width"].shape == (8,)
    w0, zero = b["point"] == "W0", b["point"] == "block_zero"
    assert np.all(b["block"][zero] <= 1e-4 * b["block"][w0])
    assert np.all(b["hessian"] * (1 + 1e-4) >= b["block"])
    np.testing.assert_allclose(b["distance"][b["point"] == "random"], 1.0, rtol=1e-5)


def test_bottleneck_width_sweep_small():
    cfg = scales.get("breaking_bottleneck_width", "ci").replace(
        widths=(8,), fixed_width=8, bottlenecks=(1, 4), seeds=2, num_inputs=6, radius=3.0, steps=20, lr_factor=0.5,
        lanczos_steps=10)
    r = bl.bottleneck_width_sweep(cfg, jax.random.key(12))
    assert list(r) == list(bl.WIDTH_FIELDS)
    assert sorted(set(r["bottleneck"].tolist())) == [1, 4] and r["width"].shape == (4,)  # (8, 1) shared


def _fit(slope: float, low: float, high: float) -> PowerLawFit:
    return PowerLawFit(slope, 0.0, 0.01, low, high, 1.0, 10)


def test_transition_verdict():
    assert bl.transition_verdict(_fit(-0.5, -0.6, -0.4)) == "Yes"
    assert bl.transition_verdict(_fit(0.0, -0.1, 0.1)) == "No"
    assert bl.transition_verdict(_fit(-0.25, -0.4, -0.1)) == "undecided"


def test_table_1_on_synthetic_sweeps():
    widths = np.repeat([100, 1000, 10000], 2)
    rng = np.random.default_rng(0)
    noise = np.exp(0.01 * rng.normal(size=widths.size))
    nl = {"input": np.zeros(widths.size, int), "width": widths, "kernel": 2.0 * noise, "phi1": np.ones(widths.size),
          "hessian": widths**-0.5 * noise, "hessian_tilde": 0.3 * noise}
    runs = {"width": widths, "kernel_change_linear_trained": widths**-1.0 * noise,
            "kernel_change_tilde": 0.5 * noise}
    bw = {"width": widths, "bottleneck": np.ones(widths.size, int), "hessian": 1.0 * noise, "kernel": noise,
          "kernel_change": 1.5 * noise}
    table = bl.table_1(nl, runs, bw)
    assert [r["transition"] for r in table] == ["Yes", "No", "No"]
    assert table[0]["‖H‖ exponent"] == pytest.approx(-0.5, abs=0.02)
    assert table[1]["ΔK at largest m"] == pytest.approx(0.5, rel=0.05)


# ---------------------------------------------------------------------------------------------
# Theorem 5.1
# ---------------------------------------------------------------------------------------------


def test_geometric_rate():
    loss = 3.0 * 0.9 ** np.arange(400)
    q, window = ow.geometric_rate(loss)
    assert q == pytest.approx(0.9, rel=1e-10)
    assert loss[window].max() <= 3e-3 and loss[window].min() >= 3e-9
    with pytest.raises(ValueError, match="train longer"):
        ow.geometric_rate(loss[:10])


def test_theorem_5_1_sweep_small():
    cfg = scales.get("optimization_theorem_5_1", "ci").replace(widths=(16,), seeds=2, num_inputs=6, radius=3.0,
                                                               steps=600, lr_factor=1.0)
    sw = ow.theorem_5_1_sweep(cfg, jax.random.key(13))
    assert sw["loss"].shape == (1, 2, 601) and sw["lr"].shape == (1, 2)
    np.testing.assert_allclose(sw["change_tilde"][:, :, 0], 0.0, atol=1e-6)
    assert np.all(sw["rho"] >= PHI_FLOOR)
    s = ow.theorem_5_1_summary(sw, rho=PHI_FLOOR)
    assert s["width"].tolist() == [16, 16]
    assert np.all(s["bound_violation"] <= 1 + 1e-5)  # Eq. (34)
    assert np.all(s["min_lambda_tilde"] >= s["rho_path"] ** 2 * s["mu"] * (1 - 1e-4))
    assert np.all(s["fitted_rate"] <= s["bound_rate"])


def test_lemma_h1_tail_against_closed_form():
    # the worked example of GAPS/Lemma H.1: R = 1/2, δ = 0.1 → 2Φ̄(log(40)/4) = 0.3564
    r = bl.lemma_h1_tail(jax.random.key(0), radius=0.5, delta=0.1, draws=20_000)
    assert r["printed_exact"] == pytest.approx(2 * norm.sf(math.log(40.0) / 4), rel=1e-12)
    assert r["printed_exact"] == pytest.approx(0.3564, abs=1e-3)
    assert r["corrected_exact"] <= 0.05
    se = math.sqrt(0.25 / 20_000)
    assert abs(r["printed"] - r["printed_exact"]) <= 5 * se
    assert abs(r["corrected"] - r["corrected_exact"]) <= 5 * se
    with pytest.raises(ValueError, match="delta"):
        bl.lemma_h1_tail(jax.random.key(0), radius=0.5, delta=1.5, draws=10)


def test_eq29_parts_and_median_kernel_change_by_hand():
    nl = {"phi1": np.array([-0.5, 1.0]), "phi2": np.array([2.0, -3.0]), "kernel": np.array([1.0, 2.0]),
          "hessian": np.array([0.1, 0.2])}
    limit, vanishing = bl.eq29_parts(nl)
    np.testing.assert_allclose(limit, [2.0, 6.0])
    np.testing.assert_allclose(vanishing, [0.05, 0.2])
    with pytest.raises(ValueError, match="phi2"):
        bl.eq29_parts({k: v for k, v in nl.items() if k != "phi2"})
    ball = {"point": np.array(["gradient", "gradient", "W0", "gradient", "gradient"]),
            "width": np.array([8, 8, 8, 32, 32]), "kernel_change": np.array([0.1, 0.3, 9.0, 0.5, 0.7])}
    assert bl.median_kernel_change(ball, (8, 32), point="gradient") == [pytest.approx(0.2), pytest.approx(0.6)]
    with pytest.raises(ValueError, match="point"):
        bl.median_kernel_change(ball, (8, 32), point="nowhere")


def test_bottleneck_width_fits_against_an_exact_power_law():
    bw = {"width": np.array([64, 64, 64, 32]), "bottleneck": np.array([1.0, 4.0, 16.0, 1.0])}
    bw["hessian"] = bw["bottleneck"] ** -0.5
    bw["kernel_change"] = 3 * bw["bottleneck"] ** -1.0
    fits = bl.bottleneck_width_fits(bw, 64)
    assert fits["hessian"].slope == pytest.approx(-0.5, abs=1e-12)
    assert fits["kernel_change"].slope == pytest.approx(-1.0, abs=1e-12)
    with pytest.raises(TypeError, match="fixed_width"):
        bl.bottleneck_width_fits(bw, 64.0)
