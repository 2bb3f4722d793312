"""Neural-network covariances and Hermite coefficients (ntkbook.covariance): closed forms against
sympy integrals, scipy quadrature, Stein's identity, Monte Carlo, and the lemmas they must satisfy."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
import sympy as sp
from scipy import integrate, special

from ntkbook import covariance as cov
from ntkbook import khatri_rao as kr


def unit_rows(rng, n, d):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def gauss(f, lo=-np.inf, hi=np.inf):
    return integrate.quad(lambda g: f(g) * math.exp(-g * g / 2) / math.sqrt(2 * math.pi), lo, hi, limit=200)[0]


def bivariate(f1, f2, rho):
    """E[f1(u) f2(v)] by nested scipy quadrature (independent of the module's routes)."""
    s = math.sqrt(1 - rho * rho)
    return gauss(lambda u: f1(u) * gauss(lambda t: f2(rho * u + s * t)))


# --------------------------------------------------------------------------------------------- Hermite


def test_exact_hermite_coefficients_closed_forms():
    assert cov.hermite_symbolic("relu", 0) == 1 / sp.sqrt(2 * sp.pi)
    assert cov.hermite_symbolic("relu", 1) == sp.Rational(1, 2)
    assert sp.simplify(cov.hermite_symbolic("relu", 2) - 1 / (2 * sp.sqrt(sp.pi))) == 0
    assert cov.hermite_symbolic("relu", 3) == 0
    assert cov.hermite_symbolic("relu", 1, derivative=True) == 1 / sp.sqrt(2 * sp.pi)  # μ_φ of ReLU
    assert cov.hermite_symbolic("quadratic", 2) == sp.sqrt(2) / 2
    assert cov.hermite_symbolic("quadratic", 1, derivative=True) == 1


@pytest.mark.parametrize("r", range(5))
def test_moment_formula_matches_sympy_integration(r):
    g = sp.Symbol("g", real=True)
    he = sp.hermite_prob(r, g) / sp.sqrt(sp.factorial(r))
    w = sp.exp(-g**2 / 2) / sp.sqrt(2 * sp.pi)
    step = sp.integrate(he * w, (g, 0, sp.oo))
    relu = sp.integrate(g * he * w, (g, 0, sp.oo))
    assert sp.simplify(step - cov.hermite_symbolic("relu", r, derivative=True)) == 0
    assert sp.simplify(relu - cov.hermite_symbolic("relu", r)) == 0


@pytest.mark.parametrize("activation", ["softplus", "tanh", "sigmoid"])
def test_stein_relation_between_coefficients(activation):
    # μ_r(φ) = μ_{r−1}(φ')/√r  (Gaussian integration by parts), an identity independent of both routes
    mu = cov.hermite_coefficients(activation, 12)
    dmu = cov.hermite_coefficients(activation, 11, derivative=True)
    np.testing.assert_allclose(mu[1:], dmu / np.sqrt(np.arange(1, 13)), atol=1e-12)


def test_quadrature_is_exact_for_polynomials_and_close_for_relu():
    q = cov.hermite_coefficients("quadratic", 6, method="quadrature")
    np.testing.assert_allclose(q, cov.hermite_coefficients("quadratic", 6, method="exact"), atol=1e-13)
    q = cov.hermite_coefficients("relu", 6, method="quadrature")
    np.testing.assert_allclose(q, cov.hermite_coefficients("relu", 6), atol=2e-3)  # kink: slow convergence


def test_normalized_hermite_polynomials_are_orthonormal():
    t, w = np.polynomial.hermite_e.hermegauss(60)
    h = cov.normalized_hermite(10, t)
    np.testing.assert_allclose(h @ np.diag(w / math.sqrt(2 * math.pi)) @ h.T, np.eye(11), atol=1e-12)


def test_activation_constants():
    assert cov.constants("softplus").mu == pytest.approx(0.207, abs=5e-4)  # Appendix E: μ_φ ≈ 0.207
    assert cov.constants("softplus").mu == pytest.approx(gauss(lambda g: g * special.expit(g)), rel=1e-10)
    assert cov.constants("relu").mu ** 2 == pytest.approx(1 / (2 * math.pi))  # Section 6.3
    assert cov.constants("relu").mu_tilde == 0.5
    gamma = gauss(lambda g: np.logaddexp(0.0, g) * (g * g - 1)) / math.sqrt(2)  # γ_φ of Section 3
    assert cov.constants("softplus").gamma == pytest.approx(gamma, rel=1e-9)
    assert abs(cov.constants("tanh").mu) < 1e-14  # tanh' is even: Lemma 6.4 gives nothing


# --------------------------------------------------------------------------------------------- dual kernels


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("rho", [-0.9, 0.0, 0.6])
def test_closed_form_kernels_against_scipy(rho):
    relu = lambda z: max(z, 0.0)  # noqa: E731
    step = lambda z: 1.0 if z >= 0 else 0.0  # noqa: E731
    assert cov.dual_kernel("relu", rho) == pytest.approx(bivariate(relu, relu, rho), abs=1e-7)
    # step ⊗ step: the inner integral is P(ρu + √(1−ρ²)t ≥ 0) = Φ(ρu/√(1−ρ²)), then integrate over u ≥ 0
    orthant = gauss(lambda u: special.ndtr(rho * u / math.sqrt(1 - rho * rho)), 0.0, np.inf)
    assert cov.dual_kernel("relu", rho, derivative=True) == pytest.approx(orthant, abs=1e-9)
    assert orthant == pytest.approx(bivariate(step, step, rho), abs=1e-5)
    assert cov.dual_kernel("quadratic", rho) == pytest.approx(bivariate(lambda z: z * z / 2, lambda z: z * z / 2, rho),
                                                              abs=1e-8)


@pytest.mark.parametrize("activation", ["softplus", "tanh"])
def test_smooth_kernels_three_routes_agree(activation):
    rho = np.linspace(-1, 1, 11)
    series = cov.dual_kernel(activation, rho, derivative=True)
    quad = cov.dual_kernel(activation, rho, derivative=True, method="quadrature", degree=128)
    np.testing.assert_allclose(series, quad, atol=1e-10)
    act = cov.get(activation)
    for r in (0.3,):
        ref = bivariate(lambda z: float(act.dphi(np.array(z))), lambda z: float(act.dphi(np.array(z))), r)
        assert cov.dual_kernel(activation, r, derivative=True) == pytest.approx(ref, abs=1e-8)


def test_kernel_endpoints():
    act = cov.get("softplus")
    assert cov.dual_kernel("softplus", 1.0, derivative=True) == pytest.approx(gauss(lambda g: act.dphi(g) ** 2))
    assert cov.dual_kernel("softplus", 0.0, derivative=True) == pytest.approx(0.25, abs=1e-12)  # (E σ(g))²
    assert cov.dual_kernel("relu", -1.0, derivative=True) == 0.0


# --------------------------------------------------------------------------------------------- covariances


def test_covariance_properties_and_monte_carlo():
    x = unit_rows(np.random.default_rng(0), 12, 5)
    for a in ("softplus", "relu"):
        sig = cov.neural_network_covariance(x, a)
        np.testing.assert_allclose(sig, sig.T)
        assert cov.lambda_min(sig) > 0
        np.testing.assert_allclose(np.diag(sig), cov.dual_kernel(a, 1.0, derivative=True), rtol=1e-12)
        mc = cov.monte_carlo(x, a, jax.random.key(1), samples=20_000)
        z = np.abs(mc.mean - sig) / mc.stderr
        assert z.max() < 5.0  # Bonferroni over 78 entries at false-alarm 1e-4
        tilde = cov.output_feature_covariance(x, a)
        mc_t = cov.monte_carlo(x, a, jax.random.key(2), samples=20_000, which="sigma_tilde")
        assert (np.abs(mc_t.mean - tilde) / mc_t.stderr).max() < 5.0


def test_monte_carlo_standard_error_shrinks_like_root_samples():
    x = unit_rows(np.random.default_rng(1), 4, 3)
    a = cov.monte_carlo(x, "softplus", jax.random.key(0), samples=2_000)
    b = cov.monte_carlo(x, "softplus", jax.random.key(0), samples=32_000)
    np.testing.assert_allclose(a.stderr / b.stderr, 4.0, rtol=0.15)


def test_quadratic_activation_covariance_is_khatri_rao_gram():
    x = unit_rows(np.random.default_rng(2), 9, 4)
    np.testing.assert_allclose(cov.neural_network_covariance(x, "quadratic"), kr.hadamard_gram(x, 2), atol=1e-15)


@pytest.mark.parametrize("activation", ["softplus", "relu", "tanh"])
def test_lemma_6_4_and_h1_h2(activation):
    x = unit_rows(np.random.default_rng(3), 15, 5)
    sig = cov.neural_network_covariance(x, activation)
    tol = 1e-10
    mats = cov.quadratic_reduction_bound(x, activation)
    assert cov.psd_margin(sig, mats["first"]) >= -tol
    assert cov.psd_margin(sig, mats["second"]) >= -tol
    lam = cov.lambda_min(sig)
    h1 = cov.higher_order_bounds(x, activation, range(6))
    assert np.all(h1["bound"] <= lam + tol)
    lam_t = cov.feature_eigenvalue(x, activation)
    h2 = cov.higher_order_bounds(x, activation, range(1, 6), output=True)
    assert np.all(h2["bound"] <= lam_t + tol)


def test_validation():
    with pytest.raises(ValueError, match="unit Euclidean norm"):
        cov.neural_network_covariance(np.ones((3, 2)), "relu")
    with pytest.raises(ValueError, match="unknown activation"):
        cov.neural_network_covariance(np.eye(2), "gelu")
    with pytest.raises(ValueError, match="rho must lie"):
        cov.dual_kernel("relu", 1.5)
    with pytest.raises(ValueError, match="no closed-form"):
        cov.hermite_coefficients("softplus", 3, method="exact")
    with pytest.raises(ValueError, match="unknown method"):
        cov.dual_kernel("relu", 0.1, method="magic")
