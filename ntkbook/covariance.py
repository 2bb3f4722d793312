"""Neural-network covariances (Oymak & Soltanolkotabi 2020, Defs. 3.1, 6.1, Lemma 6.4, App. H).

For unit-norm inputs (rows of X ∈ ℝ^{n×d}) and w ~ N(0, I_d):

* **neural network covariance** (Definition 6.1)
  Σ(X) = E[(φ'(Xw)φ'(Xw)ᵀ) ⊙ (XXᵀ)],  λ(X) = λ_min(Σ(X));
* **output feature covariance** (Definition 3.1)
  Σ̃(X) = E[φ(Xw)φ(Xw)ᵀ],  λ̃(X) = λ_min(Σ̃(X)).

Both are entrywise functions of the Gram matrix G = XXᵀ: with ρ = ⟨x_i, x_j⟩ the pair
(x_iᵀw, x_jᵀw) is standard bivariate normal with correlation ρ, so

    Σ_ij = K_{φ'}(ρ)·ρ,   Σ̃_ij = K_φ(ρ),   K_f(ρ) := E[f(u) f(v)],  corr(u, v) = ρ.

The activations (φ, φ', Hermite coefficients, constants, closed-form kernels) come from the one
registry :mod:`ntkbook.activations`; the Gauss–Hermite rule from :mod:`ntkbook.quadrature`.

**Routes to K_f and what each shares with the others.**  Every registered activation with a
derivative function has at least the two independent routes (quadrature) and (Monte Carlo):

* ``"closed_form"`` — the arc-cosine kernels of ReLU and its step derivative,
  K_step(ρ) = (π − arccos ρ)/(2π) and K_relu(ρ) = (√(1−ρ²) + (π − arccos ρ)ρ)/(2π), and the
  polynomial kernels of the quadratic and the identity (K = (1 + 2ρ²)/4 for z²/2, ρ for z, 1 for
  a constant).  Shares nothing with the other routes — not even the activation's code;
* ``"quadrature"`` — two-dimensional Gauss–Hermite quadrature of the NumPy φ or φ'
  (:func:`ntkbook.quadrature.bivariate_expectation`, ``degree × degree`` nodes; spectrally accurate for
  smooth activations, only algebraically for the kinks of ReLU);
* ``"hermite"`` — the Mehler series K_f(ρ) = Σ_{r < terms} μ_r(f)² ρ^r (Appendix H, the proof of
  Lemma H.1) with coefficients from :func:`ntkbook.activations.hermite_coefficients` (exact for the
  piecewise-polynomial activations, otherwise the 1-D rule at 200 nodes).  Shares with
  ``"quadrature"`` the NumPy φ and NumPy's node table (at another degree), not the integration:
  the series rests on Mehler's formula, the 2-D rule integrates directly.  Lemma 6.4 and Lemmas
  H.1/H.2 are *term-wise consequences* of this series, so checking them on a Σ built by
  ``"hermite"`` (or ``"auto"`` for a smooth activation) is circular — check them on ``"quadrature"``,
  ``"closed_form"`` or Monte Carlo;
* :func:`monte_carlo` / :func:`dual_kernel_monte_carlo` — sample averages of the *JAX* φ or φ'
  (:meth:`ntkbook.activations.Activation.prime`) over Gaussian draws, with standard errors.  Shares
  only the mathematical definition of φ with the NumPy routes (different code, different precision
  path).

``"auto"`` (the default) is the closed form when there is one, otherwise the Hermite series (fast,
and for analytic φ' accurate to rounding because μ_r decays geometrically).

Everything is float64 NumPy (these are reference computations on n×n matrices), except the Monte
Carlo sampler, which runs in JAX under ``jax.enable_x64``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import _validation as V
from . import eigen, quadrature
from .activations import Activation, constants, get_activation, hermite_coefficients
from .khatri_rao import sigma_min_power

# ---------------------------------------------------------------------------------------------
# Dual kernels K_f(ρ) = E[f(u) f(v)] and the covariance matrices
# ---------------------------------------------------------------------------------------------

METHODS = ("auto", "closed_form", "quadrature", "hermite")
"""Routes of :func:`dual_kernel` and the covariance functions (see the module docstring)."""


def _activation_for(activation: str | Activation, derivative: bool) -> Activation:
    act = get_activation(activation)
    if derivative and not act.has_derivative:
        raise ValueError(f"activation {act.name!r} has no derivative function (σ' is a Dirac mass), "
                         "so Σ(X) is not defined for it")
    return act


def dual_kernel(activation: str | Activation, rho: Any, *, derivative: bool = False, method: str = "auto",
                degree: int = 64, terms: int = 160) -> np.ndarray:
    """K_f(ρ) = E[f(u)f(v)] for standard normals with correlation ρ, f = φ or φ' (``derivative``).

    ``rho``: any shape, entries in [−1, 1]; returns float64 of the same shape.  ``method``:

    * ``"closed_form"`` — the registered closed form (ReLU, step, quadratic, identity; ValueError otherwise);
    * ``"quadrature"`` — ``degree × degree`` Gauss–Hermite (:func:`ntkbook.quadrature.bivariate_expectation`);
      spectrally accurate for smooth f (tanh, whose derivative has poles at ±iπ/2, converges more slowly
      than softplus), algebraically for ReLU's step;
    * ``"hermite"`` — the Mehler series Σ_{r < terms} μ_r(f)² ρ^r (Appendix H) with the coefficients of
      :func:`ntkbook.activations.hermite_coefficients` (exact where available, else 200-node quadrature);
    * ``"auto"`` — closed form if registered, else the Hermite series for smooth f, else quadrature.

    See the module docstring for which routes are independent of which.
    """
    act = _activation_for(activation, derivative)
    method = V.choice("method", method, METHODS)
    rho = np.asarray(rho, dtype=np.float64)
    if np.any(np.abs(rho) > 1 + 1e-12):
        raise ValueError("rho must lie in [-1, 1] (inputs of unit norm)")
    rho = np.clip(rho, -1.0, 1.0)
    closed = act.kernel_prime if derivative else act.kernel
    if method == "closed_form" and closed is None:
        raise ValueError(f"no closed-form dual kernel for {act.name}{chr(39) if derivative else ''}; "
                         "use method='quadrature' or 'hermite'")
    if method in ("auto", "closed_form") and closed is not None:
        return np.asarray(closed(rho), dtype=np.float64)
    if method == "hermite" or (method == "auto" and act.smooth):
        terms = V.positive_int("terms", terms)
        mu = hermite_coefficients(act, terms - 1, derivative=derivative)
        return np.polynomial.polynomial.polyval(rho, mu**2)
    order = 1 if derivative else 0
    return quadrature.bivariate_expectation(lambda z: act.numpy(z, order), rho, degree=degree)


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


def neural_network_covariance(x: Any, activation: str | Activation, *, method: str = "auto",
                              degree: int = 64, terms: int = 160) -> np.ndarray:
    """Σ(X) = E[(φ'(Xw)φ'(Xw)ᵀ) ⊙ (XXᵀ)] (Definition 6.1), shape ``(n, n)``, float64.

    ``x``: (n, d) with unit rows; ``method``, ``degree``, ``terms`` as in :func:`dual_kernel`.
    """
    k, g = _entrywise(activation, x, True, method, degree, terms)
    return k * g


def output_feature_covariance(x: Any, activation: str | Activation, *, method: str = "auto",
                              degree: int = 64, terms: int = 160) -> np.ndarray:
    """Σ̃(X) = E[φ(Xw)φ(Xw)ᵀ] (Definition 3.1), shape ``(n, n)``, float64.

    ``x``: (n, d) with unit rows; ``method``, ``degree``, ``terms`` as in :func:`dual_kernel`.
    """
    k, _ = _entrywise(activation, x, False, method, degree, terms)
    return k


def lambda_min(a: Any) -> float:
    """Smallest eigenvalue of a symmetric matrix (symmetrized first), float64 (:func:`ntkbook.eigen.lambda_min`)."""
    a = V.numpy_array("a", a, ndim=2)
    return float(eigen.lambda_min(a))


def network_eigenvalue(x: Any, activation: str | Activation, **kw: Any) -> float:
    """λ(X) = λ_min(Σ(X)) (Definition 6.1)."""
    return lambda_min(neural_network_covariance(x, activation, **kw))


def feature_eigenvalue(x: Any, activation: str | Activation, **kw: Any) -> float:
    """λ̃(X) = λ_min(Σ̃(X)) (Definition 3.1)."""
    return lambda_min(output_feature_covariance(x, activation, **kw))


# ---------------------------------------------------------------------------------------------
# Monte Carlo
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MonteCarloEstimate:
    """Sample mean over ``samples`` Gaussian draws, with entrywise standard errors (same shapes)."""

    mean: np.ndarray
    stderr: np.ndarray
    samples: int


def _mc_mean_stderr(x: np.ndarray, act: Activation, derivative: bool, key: Any, samples: int,
                    batch: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error of a_ij = f(x_iᵀw) f(x_jᵀw), w ~ N(0, I_d), f = φ or φ' (JAX, float64)."""
    n = x.shape[0]
    first = np.zeros((n, n))
    second = np.zeros((n, n))
    with jax.enable_x64(True):
        xj = jnp.asarray(x)
        done = 0
        for i in range(math.ceil(samples / batch)):
            m = min(batch, samples - done)
            a, b = _mc_moments(xj, jax.random.fold_in(key, i), m, act=act, derivative=derivative, batch=batch)
            first += np.asarray(a)
            second += np.asarray(b)
            done += m
    mean = first / samples
    var = np.maximum(second / samples - mean**2, 0.0)
    return mean, np.sqrt(var / samples)


@partial(jax.jit, static_argnames=("act", "derivative", "batch"))
def _mc_moments(x, key, m, *, act, derivative, batch):
    """Σ_s f_s f_sᵀ and Σ_s (f_s ⊙ f_s)(f_s ⊙ f_s)ᵀ over one batch of w's (the first m columns)."""
    w = jax.random.normal(key, (x.shape[1], batch), x.dtype)
    f = (act.prime if derivative else act.fn)(x @ w) * (jnp.arange(batch) < m)[None, :]
    return f @ f.T, (f * f) @ (f * f).T


def monte_carlo(x: Any, activation: str | Activation, key: Any, *, samples: int = 20_000,
                which: str = "sigma", batch: int = 4096) -> MonteCarloEstimate:
    """Monte Carlo estimate of Σ(X) (``which="sigma"``) or Σ̃(X) (``"sigma_tilde"``), shape ``(n, n)``.

    Draws w ~ N(0, I_d) in float64 JAX (explicit ``key``), averages a_ij = f(x_iᵀw) f(x_jᵀw) with the
    JAX φ or φ' of the registry (:meth:`~ntkbook.activations.Activation.prime`) and the squares a_ij²
    to report the standard error √((E a² − (E a)²)/S) of every entry (times |G_ij| for Σ).  Shares no
    code with the NumPy routes of :func:`dual_kernel`.
    """
    which = V.choice("which", which, ("sigma", "sigma_tilde"))
    act = _activation_for(activation, which == "sigma")
    samples = V.positive_int("samples", samples, minimum=2)
    batch = V.positive_int("batch", batch)
    x = _unit_rows(x)
    mean, stderr = _mc_mean_stderr(x, act, which == "sigma", key, samples, batch)
    if which == "sigma":
        g = x @ x.T
        return MonteCarloEstimate(mean * g, stderr * np.abs(g), samples)
    return MonteCarloEstimate(mean, stderr, samples)


def dual_kernel_monte_carlo(activation: str | Activation, rho: Any, key: Any, *, derivative: bool = False,
                            samples: int = 100_000, batch: int = 4096) -> MonteCarloEstimate:
    """Monte Carlo estimate of K_f(ρ) = E[f(u)f(v)] (f = φ or φ'), with standard errors.

    ``rho``: 1-D (or scalar) correlations in [−1, 1].  One set of draws w ~ N(0, I_2) serves every ρ:
    u = w₁ and v_k = ρ_k w₁ + √(1 − ρ_k²) w₂ (the rows [1, 0] and [ρ_k, √(1 − ρ_k²)] of a unit-row
    X), so the estimates are correlated across ρ but each has its own standard error.  Returns mean
    and stderr of the shape of ``rho``.  The route independent of both NumPy routes.
    """
    act = _activation_for(activation, derivative)
    samples = V.positive_int("samples", samples, minimum=2)
    batch = V.positive_int("batch", batch)
    rho = np.asarray(rho, dtype=np.float64)
    if rho.ndim > 1 or np.any(np.abs(rho) > 1 + 1e-12):
        raise ValueError("rho must be a scalar or a 1-D array with entries in [-1, 1]")
    r = np.clip(np.atleast_1d(rho), -1.0, 1.0)
    x = np.concatenate([[[1.0, 0.0]], np.stack([r, np.sqrt(1.0 - r * r)], axis=1)])
    mean, stderr = _mc_mean_stderr(x, act, derivative, key, samples, batch)
    return MonteCarloEstimate(mean[0, 1:].reshape(rho.shape), stderr[0, 1:].reshape(rho.shape), samples)


# ---------------------------------------------------------------------------------------------
# The lower bounds of Lemma 6.4 and Appendix H
# ---------------------------------------------------------------------------------------------


def quadratic_reduction_bound(x: Any, activation: str | Activation) -> dict[str, np.ndarray]:
    """The two matrices of Lemma 6.4 (Eq. 6.4): (μ̃²11ᵀ + μ²G) ⊙ G and μ²·G ⊙ G, G = XXᵀ."""
    c = constants(activation)
    x = _unit_rows(x)
    g = x @ x.T
    return {"first": (c.mu_tilde**2 + c.mu**2 * g) * g, "second": c.mu**2 * g * g}


def higher_order_bounds(x: Any, activation: str | Activation, r_values: Any, *,
                        output: bool = False) -> dict[str, np.ndarray]:
    """The lower bounds of Lemma H.1 (λ(X) ≥ μ_r²(φ')σ²_min(X^{∗(r+1)})) or, with ``output=True``,
    Lemma H.2 (λ̃(X) ≥ μ_r²(φ)σ²_min(X^{∗r})), for each r in ``r_values``.

    Returns arrays ``r``, ``mu_r`` (the Hermite coefficient), ``sigma2`` (σ²_min of the Khatri–Rao
    power, by the Gram route) and ``bound`` = μ_r²·σ²_min.
    """
    r_values = np.asarray([V.positive_int("r", int(r), minimum=0) for r in np.atleast_1d(r_values)])
    x = _unit_rows(x)
    mu = hermite_coefficients(activation, int(r_values.max()), derivative=not output)
    powers = r_values if output else r_values + 1
    sigma2 = np.array([sigma_min_power(x, int(p)) ** 2 for p in powers])  # 0 below the Gram resolution
    return {"r": r_values, "mu_r": mu[r_values], "sigma2": sigma2, "bound": mu[r_values] ** 2 * sigma2}


def psd_margin(a: Any, b: Any) -> float:
    """λ_min(A − B): A ⪰ B exactly when this is ≥ 0 (up to the floating-point error of A and B)."""
    return lambda_min(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))
