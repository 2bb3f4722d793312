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
