"""The activation registry (ntkbook.activations): constants against closed forms and brute-force grids,
derivatives against finite differences, Hermite coefficients against sympy integration and against
independent quadratures (another degree, scipy's adaptive quadrature)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp
from scipy import integrate, special

from ntkbook import activations as A

NAMES = sorted(A.ACTIVATIONS)
SMOOTH = [n for n in NAMES if A.ACTIVATIONS[n].smooth]
EXACT = ["relu", "step", "quadratic", "identity"]
GRID = np.linspace(-30.0, 30.0, 600_001)  # spacing 1e-4


def _grid_abs(act, order):
    with jax.enable_x64(True):
        return np.abs(np.asarray(act.derivative(jnp.asarray(GRID), order)))


def gauss(f, lo=-np.inf, hi=np.inf):
    """E[f(g) 1{lo < g < hi}], g ~ N(0, 1), by scipy's adaptive quadrature (independent of Gauss–Hermite)."""
    return integrate.quad(lambda g: f(g) * math.exp(-g * g / 2) / math.sqrt(2 * math.pi), lo, hi, limit=200,
                          epsabs=1e-13, epsrel=1e-12)[0]


# --------------------------------------------------------------------------------------------- registry


def test_registry_names_and_lookup():
    for name, act in A.ACTIVATIONS.items():
        assert act.name == name and A.get_activation(name) is act and A.get_activation(act) is act
    assert {"tanh", "sigmoid", "softplus", "swish", "swish(beta=0.1)", "relu", "step", "quadratic", "identity",
            "z+logcosh(z)/2"} <= set(NAMES)
    assert A.swish(1.0) is A.ACTIVATIONS["swish"] and A.swish(0.1) is A.ACTIVATIONS["swish(beta=0.1)"]
    assert A.swish(0.3) is A.swish(0.3) and A.swish(0.3).name == "swish(beta=0.3)"


def test_unknown_activation_lists_known_ones():
    with pytest.raises(ValueError, match=r"unknown activation 'gelu'; expected one of .*'tanh'.*'relu'"):
        A.get_activation("gelu")
    with pytest.raises(TypeError, match="activation must be a name"):
        A.get_activation(3)
    with pytest.raises(TypeError, match="order"):
        A.get_activation("tanh").derivative(jnp.ones(2), order=1.5)
    with pytest.raises(ValueError, match="order"):
        A.get_activation("tanh").derivative(jnp.ones(2), order=0)
    with pytest.raises(ValueError, match="order"):
        A.get_activation("tanh").numpy(np.ones(2), order=-1)
    with pytest.raises(ValueError, match="Dirac"):
        A.get_activation("step").prime(jnp.ones(2))
    with pytest.raises(ValueError, match="Dirac"):
        A.hermite_coefficients("step", 3, derivative=True)
    with pytest.raises(ValueError, match="no closed-form Hermite"):
        A.hermite_coefficients("softplus", 3, method="exact")
    with pytest.raises(ValueError, match="no closed-form Hermite"):
        A.hermite_symbolic("tanh", 1)
    with pytest.raises(ValueError, match="unknown method"):
        A.hermite_coefficients("relu", 3, method="magic")
    with pytest.raises(ValueError, match="beta"):
        A.swish(-1.0)


# --------------------------------------------------------------------------------------------- constants


@pytest.mark.parametrize("name", NAMES)
def test_constants_against_dense_grid(name):
    """sup|σ'|, sup|σ''|, inf|σ'| against autodiff on a float64 grid of spacing 1e-4 on [−30, 30].

    A grid maximum is a lower bound of the sup; the registered value may exceed it by at most
    h·sup|σ''| + (the tail beyond |z| = 30, below 1e-20 for these activations); inf likewise."""
    act = A.get_activation(name)
    d1, d2 = _grid_abs(act, 1), _grid_abs(act, 2)
    tol1 = 1e-4 * (act.smoothness if math.isfinite(act.smoothness) else 0.0) + 1e-12
    if math.isfinite(act.lipschitz):
        assert d1.max() <= act.lipschitz * (1 + 1e-12) and act.lipschitz - d1.max() <= tol1
    else:
        assert name in ("quadratic", "step")
    if math.isfinite(act.smoothness):
        d3 = _grid_abs(act, 3).max()
        assert d2.max() <= act.smoothness * (1 + 1e-12) and act.smoothness - d2.max() <= 1e-4 * d3 + 1e-12
        assert act.twice_differentiable
    else:
        assert not act.twice_differentiable and name in ("relu", "step")
    if act.has_derivative:
        assert act.derivative_floor <= d1.min() + 1e-12 and d1.min() - act.derivative_floor <= tol1


def test_closed_form_constants():
    # tanh'' = −2 tanh sech², extremal where tanh² = 1/3: |−2(1/√3)(2/3)| = 4/(3√3)
    assert A.get_activation("tanh").smoothness == pytest.approx(4 / (3 * math.sqrt(3)), rel=1e-15)
    # sigmoid'' = s(1−s)(1−2s), extremal at s = (3 ± √3)/6: √3/18
    assert A.get_activation("sigmoid").smoothness == pytest.approx(math.sqrt(3) / 18, rel=1e-15)
    assert A.get_activation("sigmoid").lipschitz == 0.25 and A.get_activation("softplus").smoothness == 0.25
    assert A.swish(0.1).smoothness == 0.05 and A.swish(1.0).smoothness == 0.5  # β/2
    assert A.swish(0.1).lipschitz == pytest.approx(1.0998, abs=1e-4) == A.swish(1.0).lipschitz
    phi = A.get_activation("z+logcosh(z)/2")
    assert (phi.lipschitz, phi.smoothness, phi.derivative_floor) == (1.5, 0.5, 0.5)
    q = A.get_activation("quadratic")
    assert q.smoothness == 1.0 and math.isinf(q.lipschitz)


def test_paper_constants():
    c = A.constants("softplus")
    assert c.mu == pytest.approx(0.207, abs=5e-4)  # Appendix E of Oymak–Soltanolkotabi: μ_φ ≈ 0.207
    assert c.mu == pytest.approx(gauss(lambda g: g * special.expit(g)), rel=1e-10)
    assert c.mu_tilde == pytest.approx(0.5, abs=1e-15)  # E[sigmoid(g)] = 1/2 by symmetry
    assert c.gamma == pytest.approx(gauss(lambda g: np.logaddexp(0.0, g) * (g * g - 1)) / math.sqrt(2), rel=1e-9)
    assert c.bound_theorem_2_1 == 1.0 and c.bound_theorem_3_2 == 1.0 and c.phi_at_zero == pytest.approx(math.log(2))
    relu = A.constants("relu")
    assert relu.mu**2 == pytest.approx(1 / (2 * math.pi), rel=1e-15)  # Section 6.3
    assert relu.mu_tilde == 0.5 and relu.gamma == pytest.approx(1 / (2 * math.sqrt(math.pi)), rel=1e-15)
    assert abs(A.constants("tanh").mu) < 1e-14  # tanh' is even: Lemma 6.4 gives nothing
    assert A.constants("quadratic").mu == 1.0 and A.constants("identity").mu_tilde == 1.0
    t = A.constants("tanh")
    assert t.bound_theorem_2_1 == 1.0 and t.mu_tilde == pytest.approx(gauss(lambda g: 1 - math.tanh(g) ** 2),
                                                                        rel=1e-12)
    assert A.constants("z+logcosh(z)/2").derivative_floor == 0.5


# --------------------------------------------------------------------------------------------- derivatives


Z = np.array([-3.1, -1.2, -0.4, 0.35, 0.9, 2.2, 5.0])  # away from the kink at 0


@pytest.mark.parametrize("name", NAMES)
def test_derivatives_against_finite_differences(name):
    """Autodiff σ', σ'', σ''' (float64) against central differences of σ, σ', σ'' (h = 1e-5: error ≈ 1e-10)."""
    act = A.get_activation(name)
    h = 1e-5
    with jax.enable_x64(True):
        z = jnp.asarray(Z)
        fd = (act(z + h) - act(z - h)) / (2 * h)
        np.testing.assert_allclose(act.derivative(z, 1), fd, rtol=1e-8, atol=1e-8)
        for order in (2, 3):
            fd = (act.derivative(z + h, order - 1) - act.derivative(z - h, order - 1)) / (2 * h)
            np.testing.assert_allclose(act.derivative(z, order), fd, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("name", [n for n in NAMES if A.ACTIVATIONS[n].has_derivative])
def test_closed_forms_agree_with_autodiff(name):
    act = A.get_activation(name)
    with jax.enable_x64(True):
        z = jnp.asarray(Z)
        # 1 − tanh² against autodiff's (1 + t)(1 − t): cancellation costs up to ε/(1 − t²) ≈ 6e-13 at z = 5
        np.testing.assert_allclose(act.prime(z), act.derivative(z, 1), rtol=1e-11, atol=1e-15)
        p, dp = act.value_and_prime(z)
        np.testing.assert_allclose(p, act(z), rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(dp, act.prime(z), rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(act.numpy(Z), np.asarray(act(z)), rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(act.numpy(Z, 1), np.asarray(act.prime(z)), rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(act.numpy(Z, 2), np.asarray(act.derivative(z, 2)), rtol=1e-14, atol=1e-15)
    assert act.numpy(Z).dtype == np.float64


def test_relu_generalized_derivative_and_step():
    relu = A.get_activation("relu")
    z = jnp.array([-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(relu.prime(z), [0.0, 1.0, 1.0])  # 1{z ≥ 0}, Section 1.3
    np.testing.assert_array_equal(relu.derivative(z), [0.0, 0.0, 1.0])  # autodiff at the kink
    np.testing.assert_array_equal(relu.derivative(z, 2), 0.0)
    step = A.get_activation("step")
    np.testing.assert_array_equal(step(z), [0.0, 1.0, 1.0])
    np.testing.assert_array_equal(step.numpy(np.asarray(z)), [0.0, 1.0, 1.0])


def test_fused_softplus_matches_jax_in_float32():
    z = jnp.linspace(-40, 40, 20001, dtype=jnp.float32)
    p, s = A.get_activation("softplus").value_and_prime(z)
    assert p.dtype == jnp.float32
    np.testing.assert_allclose(p, jax.nn.softplus(z), atol=2e-6)
    np.testing.assert_allclose(s, jax.nn.sigmoid(z), atol=1e-6)
    p, s = A.get_activation("relu").value_and_prime(z)
    np.testing.assert_array_equal(s, (z >= 0).astype(jnp.float32))
    np.testing.assert_array_equal(p, jax.nn.relu(z))


def test_swish_family_values():
    z = np.linspace(-40, 40, 2001)
    act = A.swish(0.1)
    np.testing.assert_allclose(act.numpy(z), z / (1 + np.exp(-0.1 * z)), rtol=1e-13, atol=1e-13)
    s = 1 / (1 + np.exp(-0.1 * z))
    np.testing.assert_allclose(act.numpy(z, 1), s + 0.1 * z * s * (1 - s), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(act.numpy(z, 2), 0.1 * s * (1 - s) * (2 + 0.1 * z * (1 - 2 * s)), atol=1e-14)


# --------------------------------------------------------------------------------------------- Hermite


def _sympy_hermite(expr_of_g, r, lo=-sp.oo):
    """μ_r by direct sympy integration of f·h_r against the Gaussian density (independent of the moment formula)."""
    g = sp.Symbol("g", real=True)
    he = sp.hermite_prob(r, g) / sp.sqrt(sp.factorial(r))
    return sp.simplify(sp.integrate(expr_of_g(g) * he * sp.exp(-g**2 / 2) / sp.sqrt(2 * sp.pi), (g, lo, sp.oo)))


SYMPY_FORMS = {  # (name, derivative) -> (f as a sympy expression on its support, lower limit of the support)
    ("relu", False): (lambda g: g, 0), ("relu", True): (lambda g: sp.Integer(1), 0),
    ("step", False): (lambda g: sp.Integer(1), 0),
    ("quadratic", False): (lambda g: g**2 / 2, -sp.oo), ("quadratic", True): (lambda g: g, -sp.oo),
    ("identity", False): (lambda g: g, -sp.oo), ("identity", True): (lambda g: sp.Integer(1), -sp.oo),
}


@pytest.mark.parametrize("case", sorted(SYMPY_FORMS))
@pytest.mark.parametrize("r", range(5))
def test_exact_hermite_against_sympy_integration(case, r):
    name, derivative = case
    f, lo = SYMPY_FORMS[case]
    assert sp.simplify(A.hermite_symbolic(name, r, derivative=derivative) - _sympy_hermite(f, r, lo)) == 0


def test_exact_hermite_closed_forms():
    assert A.hermite_symbolic("relu", 0) == 1 / sp.sqrt(2 * sp.pi)
    assert A.hermite_symbolic("relu", 1) == sp.Rational(1, 2)
    assert sp.simplify(A.hermite_symbolic("relu", 2) - 1 / (2 * sp.sqrt(sp.pi))) == 0
    assert A.hermite_symbolic("relu", 3) == 0
    assert A.hermite_symbolic("relu", 1, derivative=True) == 1 / sp.sqrt(2 * sp.pi)  # μ_φ of ReLU
    assert A.hermite_symbolic("step", 0) == sp.Rational(1, 2)
    assert A.hermite_symbolic("quadratic", 2) == sp.sqrt(2) / 2
    assert A.hermite_symbolic("quadratic", 1, derivative=True) == 1
    np.testing.assert_array_equal(A.hermite_coefficients("identity", 4), [0, 1, 0, 0, 0])


def _he_at_zero(n: int) -> int:
    """He_n(0): 0 for odd n, (−1)^{n/2}(n − 1)!! for even n."""
    return 0 if n % 2 else (-1) ** (n // 2) * math.prod(range(n - 1, 0, -2))


def test_exact_hermite_of_the_kinks_at_high_order():
    """Up to r = 120, against closed forms from ∫_0^∞ He_n(g)φ(g) dg = φ(0)He_{n−1}(0) (n ≥ 1) and
    g·He_r = He_{r+1} + r·He_{r−1}: step μ_r = φ(0)He_{r−1}(0)/√(r!); ReLU μ_r = φ(0)(He_r(0) +
    r·He_{r−2}(0))/√(r!) for r ≥ 2 — the moment sums of the exact path cancel to ~10^75 at these orders."""
    r_max, phi0 = 120, 1 / math.sqrt(2 * math.pi)
    step = [0.5] + [phi0 * _he_at_zero(r - 1) / math.sqrt(math.factorial(r)) for r in range(1, r_max + 1)]
    relu = [phi0, 0.5] + [phi0 * (_he_at_zero(r) + r * _he_at_zero(r - 2)) / math.sqrt(math.factorial(r))
                          for r in range(2, r_max + 1)]
    np.testing.assert_allclose(A.hermite_coefficients("step", r_max), step, rtol=1e-14, atol=0)
    np.testing.assert_allclose(A.hermite_coefficients("relu", r_max), relu, rtol=1e-14, atol=0)
    np.testing.assert_allclose(A.hermite_coefficients("relu", r_max, derivative=True), step, rtol=1e-14, atol=0)


def test_quadrature_is_exact_for_polynomials_and_slow_at_kinks():
    for name in ("quadratic", "identity"):
        for derivative in (False, True):
            q = A.hermite_coefficients(name, 8, derivative=derivative, method="quadrature")
            np.testing.assert_allclose(q, A.hermite_coefficients(name, 8, derivative=derivative), atol=1e-13)
    # kink / jump: algebraic convergence; with 200 (even) nodes the error is ≈ 1e-3 (module docstring)
    for name, derivative in (("relu", False), ("relu", True), ("step", False)):
        q = A.hermite_coefficients(name, 8, derivative=derivative, method="quadrature")
        err = np.abs(q - A.hermite_coefficients(name, 8, derivative=derivative)).max()
        assert 1e-6 < err < 3e-3


@pytest.mark.parametrize("name", SMOOTH)
def test_smooth_hermite_coefficients_independent_degrees_and_scipy(name):
    for derivative in (False, True):
        q200 = A.hermite_coefficients(name, 16, derivative=derivative, degree=200)
        q300 = A.hermite_coefficients(name, 16, derivative=derivative, degree=300)
        np.testing.assert_allclose(q200, q300, atol=1e-13)  # spectral convergence
    act = A.get_activation(name)
    for r in (0, 1, 2, 5):
        he = lambda g, r=r: special.eval_hermitenorm(r, g) / math.sqrt(math.factorial(r))  # noqa: E731
        ref = gauss(lambda g, he=he: float(act.numpy(np.array([g]))[0]) * he(g))
        assert A.hermite_coefficients(name, r)[r] == pytest.approx(ref, abs=1e-10)


@pytest.mark.parametrize("name", [*SMOOTH, "relu"])
def test_stein_relation_between_coefficients(name):
    # μ_r(φ) = μ_{r−1}(φ')/√r (Gaussian integration by parts), an identity relating two separate integrals
    mu = A.hermite_coefficients(name, 12)
    dmu = A.hermite_coefficients(name, 11, derivative=True)
    np.testing.assert_allclose(mu[1:], dmu / np.sqrt(np.arange(1, 13)), atol=1e-12)
