"""The shallow networks of Oymak & Soltanolkotabi (2020) and the Chapter 9 experiments
(ntkbook.experiments.moderate): model, Jacobian, gradient, lemmas and the GD/SGD drivers."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook import scales
from ntkbook.experiments import moderate as mo


@pytest.fixture
def small(x64):
    key = jax.random.key(0)
    x = jax.random.normal(jax.random.fold_in(key, 0), (9, 4), jnp.float64)
    x = x / jnp.linalg.norm(x, axis=1, keepdims=True)
    y = jax.random.normal(jax.random.fold_in(key, 1), (9,), jnp.float64)
    w = jax.random.normal(jax.random.fold_in(key, 2), (6, 4), jnp.float64)
    v = mo.output_weights(6, float(jnp.linalg.norm(y)), 9, dtype=jnp.float64)
    return x, y, w, v


@pytest.mark.parametrize("k", [1, 2, 5, 8])
def test_output_weights_follow_theorem_2_1(k):
    v = np.asarray(mo.output_weights(k, 3.0, 4))
    assert v.sum() == pytest.approx(0.0, abs=1e-7)
    if k > 1:
        assert np.abs(v).max() == pytest.approx(3.0 / math.sqrt(4 * k), rel=1e-6)
    assert (v > 0).sum() == (v < 0).sum() == k // 2
    assert (v == 0).sum() == k % 2  # footnote 1: one zero entry when k is odd


@pytest.mark.parametrize("activation", ["softplus", "relu", "tanh"])
def test_jacobian_matches_autodiff(small, activation):
    x, _, w, v = small
    auto = jax.jacfwd(lambda ww: mo.network(ww, x, v, activation))(w).reshape(x.shape[0], -1)
    np.testing.assert_allclose(mo.jacobian(w, x, v, activation), auto, atol=1e-12)
    j = mo.jacobian(w, x, v, activation)
    np.testing.assert_allclose(mo.jacobian_gram(w, x, v, activation), j @ j.T, atol=1e-12)


def test_gd_step_is_the_gradient_of_the_loss(small):
    x, y, w, v = small
    loss = lambda ww: 0.5 * jnp.sum((mo.network(ww, x, v, "softplus") - y) ** 2)  # noqa: E731  (Eq. 2.1)
    eta = 0.05
    _, _, lens, _, w_end, _ = mo.gd_path(w, x, y, v, eta, "softplus", 1)
    np.testing.assert_allclose(w_end, w - eta * jax.grad(loss)(w), atol=1e-13)
    assert float(lens[0]) == pytest.approx(eta * float(jnp.linalg.norm(jax.grad(loss)(w))), rel=1e-12)


def test_lemma_6_6_and_6_8_hold_for_arbitrary_weights(small):
    x, _, w, v = small
    norm_x = float(np.linalg.norm(np.asarray(x), 2))
    for s in range(5):
        w2 = w + 3.0 * jax.random.normal(jax.random.key(s), w.shape, jnp.float64)
        j, j2 = mo.jacobian(w, x, v, "softplus"), mo.jacobian(w2, x, v, "softplus")
        vinf = float(jnp.max(jnp.abs(v)))
        assert np.linalg.norm(np.asarray(j2), 2) <= math.sqrt(6) * 1.0 * vinf * norm_x  # Lemma 6.6, B = 1
        lip = 0.25 * vinf * norm_x * float(jnp.linalg.norm(w2 - w))  # Lemma 6.8, M = sup|σ''| = 1/4
        assert np.linalg.norm(np.asarray(j2 - j), 2) <= lip


def test_theorem_constants_formulas():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 8))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = rng.standard_normal(12)
    c = mo.theorem_constants("softplus", x, y)
    nx = np.linalg.norm(x, 2)
    assert c["eta"] == pytest.approx(12 / (2 * (y @ y) * nx**2))  # Corollary 2.2 (B = 1)
    assert c["rate_proof"] == pytest.approx(math.sqrt(c["rate"]))
    r = mo.theorem_constants("relu", x, y, eta_bar=0.5)
    assert r["eta"] == pytest.approx(12 * 0.5 / (3 * (y @ y) * nx**2))  # Theorem 2.3
    with pytest.raises(ValueError, match="eta_bar"):
        mo.theorem_constants("softplus", x, y, eta_bar=2.0)


def test_gradient_descent_decreases_the_residual_at_the_theorem_step():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((10, 6))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = rng.standard_normal(10)
    out = mo.gradient_descent(x, y, 40, jax.random.key(3), steps=200)
    assert np.all(np.diff(out["residual"]) <= 1e-12)
    assert out["path_length"] >= out["distance"].max() - 1e-12  # a path is at least as long as its chord
    assert out["linearized_rate"] < 1


def test_measured_rate_recovers_a_geometric_sequence():
    r = 3.0 * 0.97 ** np.arange(400)
    assert mo.measured_rate(r) == pytest.approx(0.97, rel=1e-10)


def test_sgd_single_step_and_shapes(small):
    x, y, _, _ = small
    out = mo.sgd(np.asarray(x), np.asarray(y), 6, jax.random.key(5), eta=1e-3, steps=40, runs=3, record_every=10)
    assert out["residual2"].shape == (3, 4) and out["distance"].shape == (3, 4)
    assert np.all(out["distance"] > 0)
    c = mo.sgd_step_size("softplus", np.asarray(x), np.asarray(y), nu=8)
    assert 0 < c["eta"] and c["rate"] < 1
    assert mo.sgd_event_probability(c, 10**9) == pytest.approx(0.5, abs=1e-6)  # (…)^(1/kd) → 1
    with pytest.raises(ValueError, match="nu must be"):
        mo.sgd_step_size("softplus", np.asarray(x), np.asarray(y), nu=2)


def test_jacobian_spectrum_experiment_bounds():
    out = mo.jacobian_spectrum_vs_k(scales.get("jacobian_vs_k", "ci").replace(n=8, d=5, widths=(4, 64), seeds=2), jax.random.key(0))
    assert np.all(out["norm"] <= out["norm_bound"])
    assert out["k_star"] > 0 and out["lam"] > 0


def test_random_features_experiment():
    out = mo.random_features_vs_k(scales.get("random_features", "ci").replace(n=8, d=5, widths=(2000,), seeds=2), jax.random.key(0))
    np.testing.assert_allclose(out["normalized"], out["lam_tilde"], rtol=0.5)  # λ_min(ΦΦᵀ)/k → λ̃
    assert out["lam_tilde"] >= out["gamma_bound"]  # Appendix H: λ̃ ≥ γ_φ² σ²_min(X∗X)


def test_variance_of_activation_against_closed_form_and_quadrature():
    from ntkbook.activations import get_activation
    from ntkbook.quadrature import gaussian_expectation

    assert mo.variance_of_activation("relu") == pytest.approx(0.5 - 1 / (2 * math.pi), rel=1e-14)
    # softplus: the Hermite series of the dual kernel against 1-D Gauss–Hermite quadrature of φ² and φ
    phi = get_activation("softplus").numpy
    var = gaussian_expectation(lambda t: phi(t, 0) ** 2) - gaussian_expectation(lambda t: phi(t, 0)) ** 2
    assert mo.variance_of_activation("softplus") == pytest.approx(var, rel=1e-10)
    assert mo.variance_of_activation("softplus") <= 1.0  # Poincaré: Var φ(g) ≤ B² = 1


@pytest.mark.parametrize("activation", ["relu", "softplus"])
def test_initial_misfit_moments_and_frequencies(activation):
    """E Z²/‖y‖² = Var φ(g) and E‖f(W₀) − y‖²/‖y‖² = 1 + Var φ(g) (1ᵀv = 0 makes E f(W₀) = 0), each within
    5 Monte Carlo standard errors; the tail frequencies are those of the returned samples."""
    cfg = scales.get("initial_misfit", "ci").replace(n=8, d=4, k=10, draws=4000, batch=1500, deltas=(0.2, 0.5))
    r = mo.initial_misfit(cfg, jax.random.key(5), activation=activation)
    assert r["misfit"].shape == r["z"].shape == (4000,)
    var = mo.variance_of_activation(activation)
    for sample, expected in ((r["z"] ** 2, var), (r["misfit"] ** 2, 1.0 + var)):
        se = sample.std(ddof=1) / math.sqrt(sample.size)
        assert abs(sample.mean() - expected) <= 5 * se
    assert np.all(r["misfit"] <= r["z"] + 1 + 1e-12)  # triangle inequality (everything divided by ‖y‖)
    np.testing.assert_array_equal(r["freq_step"], [np.mean(r["z"] > math.sqrt(var) + dl) for dl in cfg.deltas])
    np.testing.assert_allclose(r["tail_bound"], np.exp(-np.asarray(cfg.deltas) ** 2 * 8 / (2 * r["x_norm"] ** 2)))
    again = mo.initial_misfit(cfg, jax.random.key(5), activation=activation)
    np.testing.assert_array_equal(again["misfit"], r["misfit"])  # explicit key: the same draws


def test_initial_misfit_needs_even_k():
    with pytest.raises(ValueError, match="even"):
        mo.initial_misfit(scales.get("initial_misfit", "ci").replace(k=7), jax.random.key(0))


def test_numpy_generator_is_a_function_of_the_key():
    from ntkbook.random import numpy_generator

    a = numpy_generator(jax.random.key(3)).standard_normal(5)
    np.testing.assert_array_equal(a, numpy_generator(jax.random.key(3)).standard_normal(5))
    assert not np.allclose(a, numpy_generator(jax.random.key(4)).standard_normal(5))
    assert not np.allclose(a, numpy_generator(jax.random.fold_in(jax.random.key(3), 1)).standard_normal(5))


def _geometric_run(k, q, thm_rate, r0=2.0, steps=30):
    """A synthetic GD run whose residual contracts by q per step and whose distance is 1 − q^τ."""
    tau = np.arange(steps)
    return {"k": k, "residual": r0 * q**tau, "thm_rate": thm_rate, "thm_dist_coef": 0.5,
            "distance": 1.0 - q**tau, "linearized_residual": r0 * q**tau * (1 + 0.01 * (tau == 3)),
            "late_contraction": 1 - q, "linearized_late_contraction": 1 - q + 1e-4, "eta": 0.1,
            "kernel_change_late": 0.01}


def test_gd_checks_on_geometric_runs():
    runs = [_geometric_run(10, 0.9, 0.95), _geometric_run(20, 0.8, 0.95)]
    g = mo.gd_checks(runs)
    # ‖r_τ‖/(0.95^τ‖r₀‖) = (q/0.95)^τ is largest at τ = 1: 0.9/0.95
    assert g["envelope"] == pytest.approx(0.9 / 0.95, rel=1e-14)
    # (½(1 − q^τ) + 2q^τ)/2 = ¼ + ¾q^τ, largest at τ = 1
    assert g["distance"] == pytest.approx(0.25 + 0.75 * 0.9, rel=1e-14)
    assert g["k"] == [10, 20]
    np.testing.assert_allclose(g["deviation"], [0.01 * 0.9**3, 0.01 * 0.8**3], rtol=1e-12)
    assert g["rate_gap"] == pytest.approx([1e-4, 1e-4], rel=1e-9)
    assert g["rate_allowance"] == pytest.approx([1e-3, 1e-3], rel=1e-14)


def test_theorem_rate_gap_allowance_sums_three_effects():
    run = {"eta": 0.5, "y_norm": 4.0, "n": 8, "lambda_x": 0.1, "linearized_rate": 0.85,
           "kernel_change_late": 0.02, "linearized_late_contraction": 0.16}
    base = 0.5 * 16 / 8 * 0.1  # η‖v‖²λ(X) = 0.1
    expected = (abs(0.15 - base) + 0.5 * 0.02 + (0.16 - 0.15)) / base
    assert mo.theorem_rate_gap_allowance(run) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.7, rel=1e-12)


def test_sgd_epoch_ratio():
    result = {"epochs_recorded": np.array([1.0, 2.0, 3.0]),
              "fast": {"residual2": np.array([[2.0, 1.0, 0.5], [4.0, 1.0, 1.5]])},
              "gd_residual2": np.array([9.0, 3.0, 1.0, 0.5])}
    np.testing.assert_allclose(mo.sgd_epoch_ratio(result), [1.0, 1.0, 2.0], rtol=1e-15)


def test_gd_sweeps_and_initial_misfits_per_activation():
    # n ≤ d(d+1)/2 = 10, so σ_min(X∗X) > 0 and the theorem's constants exist
    gd = scales.get("gd_moderate", "ci").replace(n=6, d=4, widths=(20,), steps=40, activations=("softplus", "relu"))
    runs = mo.gd_sweeps(gd, jax.random.key(11))
    assert tuple(runs) == ("softplus", "relu")
    one = mo.gd_sweep(gd, jax.random.key(11), activation="relu")
    np.testing.assert_array_equal(runs["relu"][0]["residual"], one[0]["residual"])
    g = mo.gd_checks(runs["softplus"])
    assert g["envelope"] <= 1.0 and g["distance"] <= 1.0 + 1e-12  # Theorem 2.1 at its own step size
    cfg = scales.get("initial_misfit", "ci").replace(n=8, d=4, k=10, draws=500, batch=500, deltas=(0.5,),
                                                     activations=("softplus", "relu"))
    mis = mo.initial_misfits(cfg, jax.random.key(14))
    assert tuple(mis) == ("softplus", "relu")
    np.testing.assert_array_equal(mis["relu"]["misfit"],
                                  mo.initial_misfit(cfg, jax.random.key(14), activation="relu")["misfit"])


def test_chapter_entry_points_reject_bad_input():
    with pytest.raises(TypeError, match="GdModerate settings"):
        mo.gd_sweeps(scales.get("initial_misfit", "ci"), jax.random.key(0))
    with pytest.raises(TypeError, match="InitialMisfit settings"):
        mo.initial_misfits(scales.get("gd_moderate", "ci"), jax.random.key(0))
    with pytest.raises(ValueError, match="runs must hold at least one row"):
        mo.gd_checks([])
    with pytest.raises(ValueError, match=r"runs\[0\] lacks the field.*'thm_rate'"):
        mo.gd_checks([{"k": 10, "residual": np.ones(3)}])
    with pytest.raises(ValueError, match=r"run lacks the field.*'lambda_x'"):
        mo.theorem_rate_gap_allowance({"eta": 0.1})
    with pytest.raises(TypeError, match="result must be a mapping"):
        mo.sgd_epoch_ratio([1.0])
    with pytest.raises(ValueError, match=r"result\['fast'\] lacks the field"):
        mo.sgd_epoch_ratio({"epochs_recorded": np.ones(1), "fast": {}, "gd_residual2": np.ones(2)})
