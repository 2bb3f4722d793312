"""Neural-network covariances (ntkbook.covariance): every route to the dual kernels against the others
and against scipy's adaptive quadrature, Monte Carlo with standard errors, and the lemmas they must satisfy.
(Hermite coefficients and the activation constants are tested in test_activations.py.)"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from scipy import integrate, special

from ntkbook import activations as A
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


# --------------------------------------------------------------------------------------------- dual kernels


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("rho", [-0.9, 0.0, 0.6])
def test_closed_form_kernels_against_scipy(rho):
    relu = lambda z: max(z, 0.0)  # noqa: E731
    assert cov.dual_kernel("relu", rho) == pytest.approx(bivariate(relu, relu, rho), abs=1e-7)
    # step ⊗ step: the inner integral of bivariate(step, step, ρ) is P(ρu + √(1−ρ²)t ≥ 0) = Φ(ρu/√(1−ρ²)),
    # done exactly here; then integrate over u ≥ 0.  (Nested quadrature of the two discontinuous steps
    # agreed to 1e-5 but took 8.6 s at ρ = −0.9 and 5.4 s at ρ = 0.6.)
    orthant = gauss(lambda u: special.ndtr(rho * u / math.sqrt(1 - rho * rho)), 0.0, np.inf)
    assert cov.dual_kernel("relu", rho, derivative=True) == pytest.approx(orthant, abs=1e-9)
    assert cov.dual_kernel("quadratic", rho) == pytest.approx(bivariate(lambda z: z * z / 2, lambda z: z * z / 2, rho),
                                                              abs=1e-8)


@pytest.mark.parametrize("activation", ["softplus", "tanh"])
def test_smooth_kernels_three_routes_agree(activation):
    rho = np.linspace(-1, 1, 11)
    series = cov.dual_kernel(activation, rho, derivative=True)
    quad = cov.dual_kernel(activation, rho, derivative=True, method="quadrature", degree=128)
    np.testing.assert_allclose(series, quad, atol=1e-10)
    act = A.get_activation(activation)
    for r in (0.3,):
        ref = bivariate(lambda z: float(act.numpy(z, 1)), lambda z: float(act.numpy(z, 1)), r)
        assert cov.dual_kernel(activation, r, derivative=True) == pytest.approx(ref, abs=1e-8)


def test_kernel_endpoints():
    act = A.get_activation("softplus")
    assert cov.dual_kernel("softplus", 1.0, derivative=True) == pytest.approx(gauss(lambda g: act.numpy(g, 1) ** 2))
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
    with pytest.raises(ValueError, match="no closed-form dual kernel"):
        cov.dual_kernel("softplus", 0.1, method="closed_form")
    with pytest.raises(ValueError, match="Dirac"):
        cov.neural_network_covariance(np.eye(2), "step")
    with pytest.raises(ValueError, match="Dirac"):
        cov.monte_carlo(np.eye(2), "step", jax.random.key(0))
    with pytest.raises(ValueError, match="1-D"):
        cov.dual_kernel_monte_carlo("relu", np.zeros((2, 2)), jax.random.key(0))
    with pytest.raises(ValueError, match="unknown method"):
        cov.dual_kernel("relu", 0.1, method="magic")


# --------------------------------------------------------------------------------------------- independent routes

ROUTE_CASES = [(name, derivative) for name in sorted(A.ACTIVATIONS) for derivative in (False, True)
               if A.ACTIVATIONS[name].has_derivative or not derivative]


@pytest.mark.parametrize("case", ROUTE_CASES, ids=lambda c: f"{c[0]}{chr(39) if c[1] else ''}")
def test_every_activation_has_two_routes_sharing_no_code(case):
    """For every registered activation, K_φ and K_φ' by a NumPy route (closed form, else 2-D Gauss–Hermite at
    128 nodes — spectrally accurate for the smooth ones, error < 1e-9) against Monte Carlo of the JAX
    function: |z| < 4.5 at every ρ (Bonferroni over 6 correlations, false-alarm rate < 5e-5)."""
    name, derivative = case
    act = A.get_activation(name)
    rho = np.array([-0.95, -0.5, -0.1, 0.2, 0.6, 0.99])
    closed = act.kernel_prime if derivative else act.kernel
    method = "closed_form" if closed is not None else "quadrature"
    assert closed is not None or act.smooth  # every non-smooth activation has a closed form
    ref = cov.dual_kernel(name, rho, derivative=derivative, method=method, degree=128)
    mc = cov.dual_kernel_monte_carlo(name, rho, jax.random.key(11), derivative=derivative, samples=100_000)
    z = np.abs(ref - mc.mean) / np.where(mc.stderr > 0, mc.stderr, np.inf)
    assert np.all(mc.stderr > 0) or (name == "identity" and derivative)  # K ≡ 1 for the identity's φ' = 1
    assert np.all((z < 4.5) | (np.abs(ref - mc.mean) < 1e-12))


@pytest.mark.parametrize("case", ROUTE_CASES, ids=lambda c: f"{c[0]}{chr(39) if c[1] else ''}")
def test_hermite_series_against_the_other_routes(case):
    """The Mehler series (40 terms, |ρ| ≤ 0.6: truncation ≤ 0.6⁴⁰·Σμ_r² ≈ 1e-9·E[f²]) against the closed
    form (exact coefficients) or 2-D quadrature (smooth activations, 1e-9)."""
    name, derivative = case
    act = A.get_activation(name)
    rho = np.linspace(-0.6, 0.6, 7)
    series = cov.dual_kernel(name, rho, derivative=derivative, method="hermite", terms=40)
    closed = act.kernel_prime if derivative else act.kernel
    if closed is not None:
        np.testing.assert_allclose(series, closed(rho), atol=1e-8)
    if act.smooth:
        quad = cov.dual_kernel(name, rho, derivative=derivative, method="quadrature", degree=128)
        np.testing.assert_allclose(series, quad, atol=1e-8)
    auto = cov.dual_kernel(name, rho, derivative=derivative)
    np.testing.assert_array_equal(auto, closed(rho) if closed is not None else
                                  cov.dual_kernel(name, rho, derivative=derivative, method="hermite"))


def test_covariance_by_quadrature_is_independent_of_the_series():
    """Σ(X) for softplus and tanh by 2-D quadrature (no Hermite coefficients involved) agrees with the
    series-built Σ to 1e-9 entrywise — the route the Lemma 6.4 / H.1 checks should compare against."""
    x = unit_rows(np.random.default_rng(5), 10, 4)
    for a in ("softplus", "tanh"):
        quad = cov.neural_network_covariance(x, a, method="quadrature", degree=128)
        series = cov.neural_network_covariance(x, a, method="hermite")
        np.testing.assert_allclose(quad, series, atol=1e-9)
        assert cov.psd_margin(quad, cov.quadratic_reduction_bound(x, a)["second"]) >= -1e-9


def test_dual_kernel_endpoints_give_the_variance_of_the_activation():
    """K_φ(1) − K_φ(0) = E[φ(g)²] − (E φ(g))² = Var φ(g) (chapter 9, Lemma 6.12): the arc-cosine closed form
    1/2 − 1/(2π) for ReLU; for softplus the Hermite series against 1-D Gauss–Hermite quadrature of φ² and φ."""
    from ntkbook.quadrature import gaussian_expectation

    k1, k0 = cov.dual_kernel("relu", np.array([1.0, 0.0]))
    assert k1 - k0 == pytest.approx(0.5 - 1 / (2 * np.pi), rel=1e-14)
    phi = A.get_activation("softplus").numpy
    var = gaussian_expectation(lambda t: phi(t, 0) ** 2) - gaussian_expectation(lambda t: phi(t, 0)) ** 2
    k1, k0 = cov.dual_kernel("softplus", np.array([1.0, 0.0]))
    assert k1 - k0 == pytest.approx(var, rel=1e-10)
    assert k1 - k0 <= 1.0  # Poincaré: Var φ(g) ≤ E φ'(g)² ≤ B² = 1


def test_relu_eigenvalues_of_two_points_by_hand():
    """Two unit vectors at distance δ (ρ = 1 − δ²/2): Σ(X) = [[1/2, s], [s, 1/2]] with s = ρ(π − arccos ρ)/(2π), so
    λ(X) = 1/2 − s (Appendix I's near pair); two orthogonal points: Σ = I/2 and E[ℐℐᵀ] = [[1/2, 1/4], [1/4, 1/2]]."""
    for delta in (1e-3, 0.1, 1.0):
        rho = 1.0 - delta**2 / 2.0
        x = np.array([[1.0, 0.0], [rho, math.sqrt(1.0 - rho**2)]])
        expected = 0.5 - rho * (math.pi - math.acos(rho)) / (2 * math.pi)
        assert cov.network_eigenvalue(x, "relu") == pytest.approx(expected, rel=1e-9)
        assert kr.data_summary(x, orders=())["separation"] == pytest.approx(delta, rel=1e-6)
    assert cov.network_eigenvalue(np.eye(2), "relu") == pytest.approx(0.5, abs=1e-15)
    assert cov.feature_eigenvalue(np.eye(2), "step") == pytest.approx(0.25, abs=1e-15)
