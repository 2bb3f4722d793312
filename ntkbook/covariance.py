"""Neural-network covariances and Hermite coefficients (Oymak & Soltanolkotabi 2020, Defs. 3.1, 6.1, App. H).

For unit-norm inputs (rows of X ∈ ℝ^{n×d}) and w ~ N(0, I_d):

* **neural network covariance** (Definition 6.1)
  Σ(X) = E[(φ'(Xw)φ'(Xw)ᵀ) ⊙ (XXᵀ)],  λ(X) = λ_min(Σ(X));
* **output feature covariance** (Definition 3.1)
  Σ̃(X) = E[φ(Xw)φ(Xw)ᵀ],  λ̃(X) = λ_min(Σ̃(X)).

Both are entrywise functions of the Gram matrix G = XXᵀ: with ρ = ⟨x_i, x_j⟩ the pair
(x_iᵀw, x_jᵀw) is standard bivariate normal with correlation ρ, so

    Σ_ij = K_{φ'}(ρ)·ρ,   Σ̃_ij = K_φ(ρ),   K_f(ρ) := E[f(u) f(v)],  corr(u, v) = ρ.

Four independent routes to K_f, compared in the tests and the chapter:

* ``"exact"`` — closed forms: the arc-cosine kernels of ReLU and its step derivative,
  K_step(ρ) = (π − arccos ρ)/(2π) and K_relu(ρ) = (√(1−ρ²) + (π − arccos ρ)ρ)/(2π), and the
  polynomials of the quadratic activation φ(z) = z²/2: K_φ = (1 + 2ρ²)/4, K_φ' = ρ;
* ``"quadrature"`` — two-dimensional Gauss–Hermite quadrature (smooth activations: softplus, tanh,
  sigmoid; spectrally accurate, but only O(1/degree) for the kinks of ReLU);
* ``"hermite"`` — the Mehler expansion K_f(ρ) = Σ_r μ_r(f)² ρ^r truncated (Appendix H);
* :func:`monte_carlo` — sample averages over w with entrywise standard errors.

Hermite coefficients (Appendix H) use the normalized probabilists' polynomials
h_r = He_r/√(r!):  μ_r(f) = E[f(g) h_r(g)], g ~ N(0, 1).  They are exact (sympy) for ReLU, its step
derivative, the quadratic and the identity, and computed by Gauss–Hermite quadrature otherwise.
μ_φ = E[g φ'(g)] = μ_1(φ'), μ̃_φ = E[φ'(g)] = μ_0(φ') (Lemma 6.4) and γ_φ = μ_2(φ) (Section 3).

Everything is float64 NumPy (these are reference computations on n×n matrices), except the Monte
Carlo sampler, which runs in JAX under ``jax.enable_x64``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

import numpy as np

from . import _validation as V
from . import eigen

# ---------------------------------------------------------------------------------------------
# Activations with closed-form derivatives (NumPy, float64)
# ---------------------------------------------------------------------------------------------


def _sigmoid(z: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0, e) / (1.0 + e)


def _softplus(z: np.ndarray) -> np.ndarray:
    return np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))


def _arccos_kernel_step(rho: np.ndarray) -> np.ndarray:
    return (np.pi - np.arccos(np.clip(rho, -1.0, 1.0))) / (2.0 * np.pi)


def _arccos_kernel_relu(rho: np.ndarray) -> np.ndarray:
    rho = np.clip(rho, -1.0, 1.0)
    return (np.sqrt(1.0 - rho**2) + (np.pi - np.arccos(rho)) * rho) / (2.0 * np.pi)


@dataclass(frozen=True)
class CovarianceActivation:
    """An activation φ with what the covariances need.

    Attributes:
        name: registry name (the same names as :mod:`ntkbook.activations`).
        phi: φ as a float64 NumPy function.
        dphi: its (generalized) derivative φ' as a float64 NumPy function; for ReLU
            φ'(z) = 1{z ≥ 0}, the paper's convention (Section 1.3).
        kernel_phi: closed form of K_φ(ρ), or None (then quadrature).
        kernel_dphi: closed form of K_φ'(ρ), or None (then quadrature).
        hermite_phi: exact μ_r(φ) as sympy expressions (r ↦ expr), or None.
        hermite_dphi: exact μ_r(φ') as sympy expressions (r ↦ expr), or None.
        bound: B = sup |φ'| (``inf`` for the quadratic).
        smooth: True when φ' is smooth (Gauss–Hermite quadrature converges spectrally).
    """

    name: str
    phi: Callable[[np.ndarray], np.ndarray]
    dphi: Callable[[np.ndarray], np.ndarray]
    kernel_phi: Callable[[np.ndarray], np.ndarray] | None
    kernel_dphi: Callable[[np.ndarray], np.ndarray] | None
    hermite_phi: Callable[[int], Any] | None
    hermite_dphi: Callable[[int], Any] | None
    bound: float
    smooth: bool

    def jax_pair(self) -> tuple[Callable, Callable]:
        """(φ, φ') as JAX functions (for the Monte Carlo sampler and the network experiments)."""
        return _JAX_FNS[self.name]()


# --- exact Hermite coefficients (sympy) ------------------------------------------------------


def _sympy():
    import sympy as sp

    return sp


@cache
def _he_coefficients(r: int) -> tuple:
    """Coefficients c_j of He_r(g) = Σ_j c_j g^j (sympy integers)."""
    sp = _sympy()
    g = sp.Symbol("g")
    poly = sp.Poly(sp.hermite_prob(r, g), g)
    return tuple(poly.all_coeffs()[::-1])


def _half_line_moment(m: int):
    """∫_0^∞ g^m e^{−g²/2} dg / √(2π) = 2^{(m−1)/2} Γ((m+1)/2) / √(2π) (exact, sympy)."""
    sp = _sympy()
    return sp.Integer(2) ** sp.Rational(m - 1, 2) * sp.gamma(sp.Rational(m + 1, 2)) / sp.sqrt(2 * sp.pi)


def _full_line_moment(m: int):
    """E[g^m] for g ~ N(0, 1): (m − 1)!! for even m, 0 for odd m."""
    sp = _sympy()
    return sp.Integer(0) if m % 2 else sp.factorial2(m - 1) if m > 0 else sp.Integer(1)


def _hermite_from_moments(r: int, moment: Callable[[int], Any], shift: int = 0):
    """Σ_j c_j·moment(j + shift) / √(r!) — μ_r of g ↦ g^shift (restricted by ``moment``)."""
    sp = _sympy()
    total = sum(c * moment(j + shift) for j, c in enumerate(_he_coefficients(r)) if c != 0)
    return sp.nsimplify(sp.simplify(total / sp.sqrt(sp.factorial(r))))


@cache
def _mu_step(r: int):  # φ'(z) = 1{z ≥ 0}
    return _hermite_from_moments(r, _half_line_moment, 0)


@cache
def _mu_relu(r: int):  # φ(z) = max(z, 0)
    return _hermite_from_moments(r, _half_line_moment, 1)


@cache
def _mu_quadratic(r: int):  # φ(z) = z²/2
    sp = _sympy()
    return sp.simplify(_hermite_from_moments(r, _full_line_moment, 2) / 2)


@cache
def _mu_identity(r: int):  # φ'(z) = z for the quadratic
    return _hermite_from_moments(r, _full_line_moment, 1)


ACTIVATIONS: dict[str, CovarianceActivation] = {
    "relu": CovarianceActivation("relu", lambda z: np.maximum(z, 0.0), lambda z: (z >= 0).astype(float),
                                 _arccos_kernel_relu, _arccos_kernel_step, _mu_relu, _mu_step, 1.0, False),
    "softplus": CovarianceActivation("softplus", _softplus, _sigmoid, None, None, None, None, 1.0, True),
    "tanh": CovarianceActivation("tanh", np.tanh, lambda z: 1.0 - np.tanh(z) ** 2, None, None, None, None, 1.0,
                                 True),
    "sigmoid": CovarianceActivation("sigmoid", _sigmoid, lambda z: _sigmoid(z) * (1.0 - _sigmoid(z)), None, None,
                                    None, None, 0.25, True),
    "quadratic": CovarianceActivation("quadratic", lambda z: 0.5 * z * z, lambda z: np.asarray(z, float),
                                      lambda rho: (1.0 + 2.0 * rho**2) / 4.0, lambda rho: np.asarray(rho, float),
                                      _mu_quadratic, _mu_identity, math.inf, True),
}
"""Activations whose covariances this module computes."""


def _jax_fns(name: str) -> Callable[[], tuple[Callable, Callable]]:
    def make():
        import jax
        import jax.numpy as jnp

        return {
            "relu": (jax.nn.relu, lambda z: (z >= 0).astype(z.dtype)),
            "softplus": (jax.nn.softplus, jax.nn.sigmoid),
            "tanh": (jnp.tanh, lambda z: 1.0 - jnp.tanh(z) ** 2),
            "sigmoid": (jax.nn.sigmoid, lambda z: jax.nn.sigmoid(z) * (1.0 - jax.nn.sigmoid(z))),
            "quadratic": (lambda z: 0.5 * z * z, lambda z: z),
        }[name]

    return make


_JAX_FNS = {name: _jax_fns(name) for name in ACTIVATIONS}


def get(activation: str | CovarianceActivation) -> CovarianceActivation:
    """Look up an activation by name (ValueError listing the known names otherwise)."""
    if isinstance(activation, CovarianceActivation):
        return activation
    return ACTIVATIONS[V.choice("activation", activation, ACTIVATIONS)]


# ---------------------------------------------------------------------------------------------
# Hermite coefficients
# ---------------------------------------------------------------------------------------------


@cache
def _gh_nodes(degree: int) -> tuple[np.ndarray, np.ndarray]:
    t, w = np.polynomial.hermite_e.hermegauss(degree)
    return t, w / math.sqrt(2.0 * math.pi)


def normalized_hermite(r_max: int, t: Any) -> np.ndarray:
    """h_0(t), …, h_{r_max}(t) with h_r = He_r/√(r!), shape ``(r_max + 1, *t.shape)``.

    Stable three-term recurrence h_{r+1}(t) = (t h_r(t) − √r h_{r−1}(t)) / √(r + 1).
    """
    r_max = V.positive_int("r_max", r_max, minimum=0)
    t = np.asarray(t, dtype=np.float64)
    out = np.empty((r_max + 1, *t.shape))
    out[0] = 1.0
    if r_max >= 1:
        out[1] = t
    for r in range(1, r_max):
        out[r + 1] = (t * out[r] - math.sqrt(r) * out[r - 1]) / math.sqrt(r + 1)
    return out


def hermite_quadrature(f: Callable[[np.ndarray], np.ndarray], r_max: int, *, degree: int = 200) -> np.ndarray:
    """μ_0(f), …, μ_{r_max}(f) by ``degree``-point Gauss–Hermite quadrature (float64).

    Exact for polynomials f of degree < 2·degree − r_max; spectrally accurate for analytic f.
    """
    V.callable_("f", f)
    r_max = V.positive_int("r_max", r_max, minimum=0)
    degree = V.positive_int("degree", degree)
    t, w = _gh_nodes(degree)
    values = np.asarray(f(t), dtype=np.float64)
    return normalized_hermite(r_max, t) @ (w * values)


def hermite_coefficients(activation: str | CovarianceActivation, r_max: int, *, derivative: bool = False,
                         method: str = "auto", degree: int = 200) -> np.ndarray:
    """Hermite coefficients μ_r(φ) (or μ_r(φ') with ``derivative=True``) for r = 0 … r_max (App. H).

    ``method``: ``"exact"`` (sympy closed forms; ReLU, its step derivative, quadratic, identity),
    ``"quadrature"`` (Gauss–Hermite of ``degree`` points) or ``"auto"`` (exact when available).
    """
    act = get(activation)
    r_max = V.positive_int("r_max", r_max, minimum=0)
    method = V.choice("method", method, ("auto", "exact", "quadrature"))
    exact = act.hermite_dphi if derivative else act.hermite_phi
    if method == "exact" and exact is None:
        raise ValueError(f"no closed-form Hermite coefficients for {act.name}{chr(39) if derivative else ''}; "
                         "use method='quadrature'")
    if exact is not None and method in ("auto", "exact"):
        return np.array([float(exact(r)) for r in range(r_max + 1)])
    return hermite_quadrature(act.dphi if derivative else act.phi, r_max, degree=degree)


def hermite_symbolic(activation: str, r: int, *, derivative: bool = False):
    """The exact μ_r(φ) (or μ_r(φ')) as a sympy expression (ReLU, quadratic)."""
    act = get(activation)
    r = V.positive_int("r", r, minimum=0)
    exact = act.hermite_dphi if derivative else act.hermite_phi
    if exact is None:
        raise ValueError(f"{act.name} has no closed-form Hermite coefficients in this module")
    return exact(r)


@dataclass(frozen=True)
class ActivationConstants:
    """The constants of Lemma 6.4, Theorem 3.2 and the theorems of Section 2 for one activation.

    Attributes:
        mu: μ_φ = E[g φ'(g)] = μ_1(φ').
        mu_tilde: μ̃_φ = E[φ'(g)] = μ_0(φ').
        gamma: γ_φ = E[φ(g)(g² − 1)]/√2 = μ_2(φ) (the constant below Theorem 3.2).
        bound: B = sup |φ'|.
    """

    mu: float
    mu_tilde: float
    gamma: float
    bound: float


def constants(activation: str | CovarianceActivation) -> ActivationConstants:
    """μ_φ, μ̃_φ, γ_φ and B for ``activation`` (exact where possible)."""
    act = get(activation)
    d = hermite_coefficients(act, 1, derivative=True)
    p = hermite_coefficients(act, 2)
    return ActivationConstants(mu=float(d[1]), mu_tilde=float(d[0]), gamma=float(p[2]), bound=act.bound)


# ---------------------------------------------------------------------------------------------
# Dual kernels K_f(ρ) = E[f(u) f(v)] and the covariance matrices
# ---------------------------------------------------------------------------------------------

METHODS = ("exact", "quadrature", "hermite")


def _quadrature_kernel(f: Callable[[np.ndarray], np.ndarray], rho: np.ndarray, degree: int,
                       chunk: int = 2048) -> np.ndarray:
    """E[f(u)f(v)], u = t_i, v = ρ t_i + √(1−ρ²) t_j over a degree × degree Gauss–Hermite grid."""
    t, w = _gh_nodes(degree)
    ft = np.asarray(f(t), dtype=np.float64)
    flat = rho.ravel()
    out = np.empty_like(flat)
    for start in range(0, flat.size, chunk):
        r = flat[start:start + chunk, None, None]
        v = r * t[None, :, None] + np.sqrt(np.maximum(1.0 - r * r, 0.0)) * t[None, None, :]
        inner = np.asarray(f(v), dtype=np.float64) @ w  # over j
        out[start:start + chunk] = inner @ (w * ft)  # over i
    return out.reshape(rho.shape)


def dual_kernel(activation: str | CovarianceActivation, rho: Any, *, derivative: bool = False,
                method: str = "exact", degree: int = 64, terms: int = 160) -> np.ndarray:
    """K_f(ρ) = E[f(u)f(v)] for standard normals with correlation ρ, f = φ or φ' (``derivative``).

    ``method="exact"`` uses the closed form when there is one and otherwise the Mehler series
    (fast, and for analytic f accurate to rounding: its coefficients decay geometrically);
    ``"quadrature"`` forces ``degree × degree`` Gauss–Hermite (an independent route, slower, and for
    tanh — whose derivative has poles at ±iπ/2 — converging more slowly); ``"hermite"`` sums the
    Mehler series Σ_{r < terms} μ_r(f)² ρ^r (Appendix H) with quadrature coefficients.
    """
    act = get(activation)
    method = V.choice("method", method, METHODS)
    rho = np.asarray(rho, dtype=np.float64)
    if np.any(np.abs(rho) > 1 + 1e-12):
        raise ValueError("rho must lie in [-1, 1] (inputs of unit norm)")
    rho = np.clip(rho, -1.0, 1.0)
    closed = act.kernel_dphi if derivative else act.kernel_phi
    if method == "exact" and closed is not None:
        return np.asarray(closed(rho), dtype=np.float64)
    if method == "hermite" or (method == "exact" and act.smooth):
        mu = hermite_coefficients(act, terms - 1, derivative=derivative)
        return np.polynomial.polynomial.polyval(rho, mu**2)
    return _quadrature_kernel(act.dphi if derivative else act.phi, rho, V.positive_int("degree", degree))


def _unit_rows(x: Any) -> np.ndarray:
    x = V.numpy_array("x", x, ndim=2)
    norms = np.linalg.norm(x, axis=1)
    if np.any(np.abs(norms - 1.0) > 1e-5):
        raise ValueError("the rows of x must have unit Euclidean norm (the covariances assume ‖x_i‖ = 1)")
    return x / norms[:, None]


def _entrywise(activation, x, derivative, method, degree, terms) -> tuple[np.ndarray, np.ndarray]:
    x = _unit_rows(x)
    g = np.clip(x @ x.T, -1.0, 1.0)
    np.fill_diagonal(g, 1.0)  # exactly: the arc-cosine kernels have infinite slope at ρ = 1
    n = g.shape[0]
    iu = np.triu_indices(n)
    k = np.empty((n, n))
    k[iu] = dual_kernel(activation, g[iu], derivative=derivative, method=method, degree=degree, terms=terms)
    k.T[iu] = k[iu]
    return k, g


def neural_network_covariance(x: Any, activation: str | CovarianceActivation, *, method: str = "exact",
                              degree: int = 64, terms: int = 160) -> np.ndarray:
    """Σ(X) = E[(φ'(Xw)φ'(Xw)ᵀ) ⊙ (XXᵀ)] (Definition 6.1), shape ``(n, n)``, float64."""
    k, g = _entrywise(activation, x, True, method, degree, terms)
    return k * g


def output_feature_covariance(x: Any, activation: str | CovarianceActivation, *, method: str = "exact",
                              degree: int = 64, terms: int = 160) -> np.ndarray:
    """Σ̃(X) = E[φ(Xw)φ(Xw)ᵀ] (Definition 3.1), shape ``(n, n)``, float64."""
    k, _ = _entrywise(activation, x, False, method, degree, terms)
    return k


def lambda_min(a: Any) -> float:
    """Smallest eigenvalue of a symmetric matrix (symmetrized first), float64 (:func:`ntkbook.eigen.lambda_min`)."""
    a = V.numpy_array("a", a, ndim=2)
    return float(eigen.lambda_min(a))


def network_eigenvalue(x: Any, activation: str | CovarianceActivation, **kw: Any) -> float:
    """λ(X) = λ_min(Σ(X)) (Definition 6.1)."""
    return lambda_min(neural_network_covariance(x, activation, **kw))


def feature_eigenvalue(x: Any, activation: str | CovarianceActivation, **kw: Any) -> float:
    """λ̃(X) = λ_min(Σ̃(X)) (Definition 3.1)."""
    return lambda_min(output_feature_covariance(x, activation, **kw))


# ---------------------------------------------------------------------------------------------
# Monte Carlo
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MonteCarloCovariance:
    """Sample mean of a covariance over ``samples`` draws of w, with entrywise standard errors."""

    mean: np.ndarray
    stderr: np.ndarray
    samples: int


def monte_carlo(x: Any, activation: str | CovarianceActivation, key: Any, *, samples: int = 20_000,
                which: str = "sigma", batch: int = 4096) -> MonteCarloCovariance:
    """Monte Carlo estimate of Σ(X) (``which="sigma"``) or Σ̃(X) (``"sigma_tilde"``).

    Draws w ~ N(0, I_d) in float64 JAX (explicit ``key``), averages a_ij = f(x_iᵀw) f(x_jᵀw) and the
    squares a_ij² to report the standard error √((E a² − (E a)²)/S) of every entry (times |G_ij| for
    Σ).  An independent check of the closed forms and the quadrature.
    """
    import jax

    act = get(activation)
    which = V.choice("which", which, ("sigma", "sigma_tilde"))
    samples = V.positive_int("samples", samples, minimum=2)
    batch = V.positive_int("batch", batch)
    x = _unit_rows(x)
    n = x.shape[0]
    first = np.zeros((n, n))
    second = np.zeros((n, n))
    with jax.enable_x64(True):
        xj = jax.numpy.asarray(x)
        done = 0
        for i in range(math.ceil(samples / batch)):
            m = min(batch, samples - done)
            a, b = _mc_moments(xj, jax.random.fold_in(key, i), m, activation=act.name, which=which, batch=batch)
            first += np.asarray(a)
            second += np.asarray(b)
            done += m
    mean = first / samples
    var = np.maximum(second / samples - mean**2, 0.0)
    stderr = np.sqrt(var / samples)
    if which == "sigma":
        g = x @ x.T
        return MonteCarloCovariance(mean * g, stderr * np.abs(g), samples)
    return MonteCarloCovariance(mean, stderr, samples)


@cache
def _mc_kernel():
    import jax
    import jax.numpy as jnp

    @partial(jax.jit, static_argnames=("activation", "which", "batch"))
    def moments(x, key, m, *, activation, which, batch):
        phi, dphi = get(activation).jax_pair()
        w = jax.random.normal(key, (x.shape[1], batch), x.dtype)
        f = (dphi if which == "sigma" else phi)(x @ w) * (jnp.arange(batch) < m)[None, :]
        return f @ f.T, (f * f) @ (f * f).T

    return moments


def _mc_moments(x, key, m, *, activation, which, batch):
    """Σ_s f_s f_sᵀ and Σ_s (f_s ⊙ f_s)(f_s ⊙ f_s)ᵀ over one batch of w's (the first m columns)."""
    return _mc_kernel()(x, key, m, activation=activation, which=which, batch=batch)


# ---------------------------------------------------------------------------------------------
# The lower bounds of Lemma 6.4 and Appendix H
# ---------------------------------------------------------------------------------------------


def quadratic_reduction_bound(x: Any, activation: str | CovarianceActivation) -> dict[str, np.ndarray]:
    """The two matrices of Lemma 6.4 (Eq. 6.4): (μ̃²11ᵀ + μ²G) ⊙ G and μ²·G ⊙ G, G = XXᵀ."""
    c = constants(activation)
    x = _unit_rows(x)
    g = x @ x.T
    return {"first": (c.mu_tilde**2 + c.mu**2 * g) * g, "second": c.mu**2 * g * g}


def higher_order_bounds(x: Any, activation: str | CovarianceActivation, r_values: Any, *,
                        output: bool = False) -> dict[str, np.ndarray]:
    """The lower bounds of Lemma H.1 (λ(X) ≥ μ_r²(φ')σ²_min(X^{∗(r+1)})) or, with ``output=True``,
    Lemma H.2 (λ̃(X) ≥ μ_r²(φ)σ²_min(X^{∗r})), for each r in ``r_values``.

    Returns arrays ``r``, ``mu_r`` (the Hermite coefficient), ``sigma2`` (σ²_min of the Khatri–Rao
    power, by the Gram route) and ``bound`` = μ_r²·σ²_min.
    """
    from .khatri_rao import sigma_min_power

    r_values = np.asarray([V.positive_int("r", int(r), minimum=0) for r in np.atleast_1d(r_values)])
    x = _unit_rows(x)
    mu = hermite_coefficients(activation, int(r_values.max()), derivative=not output)
    powers = r_values if output else r_values + 1
    sigma2 = np.array([sigma_min_power(x, int(p)) ** 2 for p in powers])  # 0 below the Gram resolution
    return {"r": r_values, "mu_r": mu[r_values], "sigma2": sigma2, "bound": mu[r_values] ** 2 * sigma2}


def psd_margin(a: Any, b: Any) -> float:
    """λ_min(A − B): A ⪰ B exactly when this is ≥ 0 (up to the floating-point error of A and B)."""
    return lambda_min(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))
