"""The one Gauss–Hermite rule (ntkbook.quadrature): exactness boundary, spectral accuracy, the 2-D rule
against closed-form bivariate expectations and against Monte Carlo."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from scipy import special

from ntkbook import activations as A
from ntkbook import covariance as cov
from ntkbook import quadrature as Q


def double_factorial(k: int) -> int:
    return math.prod(range(k, 0, -2)) if k > 0 else 1


@pytest.mark.parametrize("degree", [1, 5, 20, 64])
def test_exact_below_twice_the_degree_and_not_at_it(degree):
    t, w = Q.gauss_hermite(degree)
    assert t.shape == w.shape == (degree,) and w.sum() == pytest.approx(1.0, abs=1e-14)
    for k in range(0, 2 * degree, 2):  # odd moments vanish by symmetry; even ones are (k − 1)!!
        assert np.dot(w, t**k) == pytest.approx(double_factorial(k - 1), rel=1e-11)
    # E[g^{2n}] is the first moment the n-point rule gets wrong: the error is ‖He_n‖² = n! exactly
    # (resolvable in float64 while n! ≫ ε·(2n − 1)!!, i.e. for the smaller degrees)
    if degree <= 20:
        error = double_factorial(2 * degree - 1) - np.dot(w, t ** (2 * degree))
        assert error == pytest.approx(math.factorial(degree), rel=1e-6)


def test_rule_is_cached_read_only_and_bounded():
    t, w = Q.gauss_hermite(30)
    assert Q.gauss_hermite(30)[0] is t
    with pytest.raises(ValueError):
        t[0] = 1.0
    t, w = Q.gauss_hermite(Q.MAX_DEGREE)
    assert np.all(np.isfinite(w)) and np.dot(w, t**2) == pytest.approx(1.0, rel=1e-12)
    with pytest.raises(ValueError, match="degree must be at most"):
        Q.gauss_hermite(Q.MAX_DEGREE + 1)
    with pytest.raises(ValueError, match="degree must be"):
        Q.gauss_hermite(0)


def test_gaussian_expectation_moments():
    assert Q.gaussian_expectation(lambda w: w**2) == pytest.approx(1.0, rel=1e-13)
    assert Q.gaussian_expectation(lambda w: w**4, std=2.0) == pytest.approx(3 * 16, rel=1e-13)
    assert Q.gaussian_expectation(np.cos) == pytest.approx(math.exp(-0.5), rel=1e-13)
    assert Q.gaussian_expectation(lambda w: np.exp(0.7 * w), mean=0.2) == pytest.approx(
        math.exp(0.7 * 0.2 + 0.7**2 / 2), rel=1e-12)
    with pytest.raises(ValueError, match="same shape"):
        Q.gaussian_expectation(lambda w: 1.0)
    with pytest.raises(TypeError, match="g must be callable"):
        Q.gaussian_expectation(3)


def test_kinks_converge_algebraically():
    """E[max(g − a, 0)] = φ(a) − aΦ(−a): the documented ≈ 1/degree behaviour (and no better than 1e-5)."""
    a = 0.3
    ref = math.exp(-a * a / 2) / math.sqrt(2 * math.pi) - a * special.ndtr(-a)
    errors = [abs(Q.gaussian_expectation(lambda g: np.maximum(g - a, 0.0), degree=n) - ref) for n in (64, 151, 301)]
    assert all(1e-5 < e < 0.3 / n for e, n in zip(errors, (64, 151, 301), strict=True))


def test_hermite_basis_orthonormal_and_projection_exact_for_polynomials():
    t, w = Q.gauss_hermite(60)
    h = Q.hermite_basis(10, t)
    np.testing.assert_allclose(h @ np.diag(w) @ h.T, np.eye(11), atol=1e-12)
    # g³ = He_3 + 3 He_1 = √6 h_3 + 3 h_1
    np.testing.assert_allclose(Q.hermite_projection(lambda g: g**3, 5), [0, 3, 0, math.sqrt(6), 0, 0], atol=1e-13)
    with pytest.raises(ValueError, match="same shape"):
        Q.hermite_projection(lambda g: 2.0, 3)


RHO = np.array([-1.0, -0.7, -0.2, 0.0, 0.45, 0.9, 1.0])


def test_bivariate_rule_against_closed_forms():
    np.testing.assert_allclose(Q.bivariate_expectation(lambda z: z, RHO), RHO, atol=1e-14)
    np.testing.assert_allclose(Q.bivariate_expectation(lambda z: z * z, RHO), 1 + 2 * RHO**2, atol=1e-13)
    # E[e^{a u} e^{b v}] = exp((a² + b²)/2 + abρ) (smooth: geometric convergence)
    a, b = 0.8, -0.5
    got = Q.bivariate_expectation(lambda z: np.exp(a * z), RHO, lambda z: np.exp(b * z))
    np.testing.assert_allclose(got, np.exp((a * a + b * b) / 2 + a * b * RHO), rtol=1e-13)
    # arc-cosine kernels: kink (ReLU) ≈ 1/degree, jump (step) ≈ degree^{-1/2} (module docstring)
    relu = A.get_activation("relu")
    for degree, tol_relu, tol_step in ((64, 0.5 / 64, 0.4 / math.sqrt(64)), (128, 0.5 / 128, 0.4 / math.sqrt(128))):
        got = Q.bivariate_expectation(relu.numpy, RHO, degree=degree)
        np.testing.assert_allclose(got, relu.kernel(RHO), atol=tol_relu)
        got = Q.bivariate_expectation(lambda z: relu.numpy(z, 1), RHO, degree=degree)
        np.testing.assert_allclose(got, relu.kernel_prime(RHO), atol=tol_step)
    with pytest.raises(ValueError, match="rho must lie"):
        Q.bivariate_expectation(np.tanh, 1.5)
    with pytest.raises(TypeError, match="g must be callable"):
        Q.bivariate_expectation(np.tanh, 0.5, g=2)


@pytest.mark.parametrize("name", ["tanh", "softplus", "swish", "z+logcosh(z)/2"])
@pytest.mark.parametrize("order", [0, 1])
def test_bivariate_rule_against_monte_carlo(name, order):
    """2-D Gauss–Hermite (NumPy φ or φ') against Monte Carlo of the JAX φ or φ' (shares no code): every
    |z| < 4.5, a Bonferroni bound over 5 correlations at a false-alarm rate below 1e-4 (the quadrature
    error of these smooth integrands at 128 nodes is below 1e-9, far below the standard errors)."""
    act = A.get_activation(name)
    rho = RHO[1:-1]
    quad = Q.bivariate_expectation(lambda z: act.numpy(z, order), rho, degree=128)
    mc = cov.dual_kernel_monte_carlo(name, rho, jax.random.key(7), derivative=bool(order), samples=200_000)
    assert np.all(mc.stderr > 0)
    assert np.max(np.abs(quad - mc.mean) / mc.stderr) < 4.5


def test_gauss_legendre_on_the_unit_interval_is_exact_below_twice_its_nodes():
    t, w = Q.gauss_legendre_unit(5)
    assert np.all((t > 0) & (t < 1)) and w.sum() == pytest.approx(1.0, rel=1e-15)
    for k in range(10):  # ∫₀¹ t^k dt = 1/(k + 1), exact for k < 10
        assert float(w @ t**k) == pytest.approx(1.0 / (k + 1), rel=1e-14)
    assert float(w @ t**10) != pytest.approx(1.0 / 11, rel=1e-10)
    assert Q.gauss_legendre_unit(5)[0] is t  # cached, read-only
    with pytest.raises(ValueError, match="nodes"):
        Q.gauss_legendre_unit(0)
