"""The quadrature rules: Gauss–Hermite for Gaussian expectations in one and two dimensions, and Gauss–Legendre
on [0, 1] for integrals along a segment (float64 NumPy).

For g ~ N(0, 1) and a function f,

    E[f(g)] = (1/√(2π)) ∫ f(t) e^{−t²/2} dt ≈ Σ_i ω_i f(t_i),

with the nodes t_i (roots of the probabilists' Hermite polynomial He_degree) and weights ω_i of
NumPy's ``hermegauss``, divided by √(2π) so that Σ_i ω_i = 1 (:func:`gauss_hermite`, cached).
Everything in the package that integrates against a Gaussian uses this one rule:

* :func:`gaussian_expectation` — E[f(w)] for w ~ N(mean, std²) (the nodes shifted and scaled);
* :func:`hermite_projection` — the normalized Hermite coefficients μ_r(f) = E[f(g) h_r(g)],
  h_r = He_r/√(r!) (:func:`hermite_basis`), Appendix H of Oymak & Soltanolkotabi (2020);
* :func:`bivariate_expectation` — E[f(u) g(v)] for standard normals u, v with correlation ρ, on the
  degree × degree tensor grid u = t_i, v = ρ t_i + √(1−ρ²) t_j (the dual kernels behind Σ(X), Σ̃(X)).

**Accuracy.**  A degree-n rule is *exact* for polynomials of degree < 2n (in one dimension, and for
polynomials in (u, v) of degree < 2n in each grid variable in two).  For analytic integrands the
error decays geometrically, at a speed set by the distance of the nearest complex singularity from
the real axis: measured on E[·] of the derivative-type integrands used in the book, E[sigmoid(g)²]
is exact to rounding from n = 64, E[tanh'(g)⁴] (poles at ±iπ/2) has error 1e-7 at n = 64, 5e-13 at
n = 151 and 2e-15 at n = 200.  Integrands with a kink or a jump converge only algebraically and
not monotonically in n: with a kink at 0.3, E[max(g − 0.3, 0)] has errors 7e-4 … 1.5e-3 for
n = 64 … 128 and 3–4e-4 for n = 151 … 301 (≈ 1/n); with a jump, E[1{g ≥ 0.3}] has errors
1e-2 … 3e-2 (≈ the weight of the node nearest the jump, O(n^{−1/2})).  For ReLU and its step
derivative use the closed forms of :mod:`ntkbook.activations` and :mod:`ntkbook.covariance`; the
rule is then an independent (slow) check.  Jumps *at* 0 (ReLU's step derivative) are special: an odd
degree puts a node exactly on the jump, counted with its full weight (≈ 0.065 at 151 nodes: errors
5e-2 in the Hermite coefficients of the step, against 1.3e-3 at 200 nodes), and symmetric rules of
even degree happen to be exact for E[1{g ≥ 0}] = ½ — do not read that as accuracy.

**Degrees used by the callers** (each is an explicit argument): 151 by default in
:func:`gaussian_expectation` (the infinite-width limits of chapters 2, 7 and 7b:
``reproductions.one_hidden_layer``, chapter 7's median limit,
``reproductions.orthogonality.clt_prediction``), 301 for the
Eq. (30) limit in chapter 5 (the experiment ``eq30``), 200 for Hermite coefficients
(:func:`ntkbook.activations.hermite_coefficients`), 64 by default for the 2-D rule
(:func:`ntkbook.covariance.dual_kernel` with ``method="quadrature"``; the chapter-8 settings pass
96 or 128).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from . import _validation as V

MAX_DEGREE = 360
"""The largest supported degree.  Beyond about 370 nodes NumPy's ``hermegauss`` weights underflow (the
outermost ones fall below the smallest double) and the rule silently loses its moments."""


@cache
def _rule(degree: int) -> tuple[np.ndarray, np.ndarray]:
    t, w = np.polynomial.hermite_e.hermegauss(degree)
    w = w / math.sqrt(2.0 * math.pi)
    t.flags.writeable = False
    w.flags.writeable = False
    return t, w


def gauss_hermite(degree: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of the ``degree``-point Gauss–Hermite rule for N(0, 1) (cached, read-only).

    Returns ``(t, w)``, both of shape ``(degree,)``, float64, with Σ w = 1 and
    E[f(g)] ≈ Σ_i w_i f(t_i); exact for polynomials f of degree < 2·degree.  ``degree`` ≤
    :data:`MAX_DEGREE`.
    """
    degree = V.positive_int("degree", degree)
    if degree > MAX_DEGREE:
        raise ValueError(f"degree must be at most {MAX_DEGREE} (NumPy's hermegauss weights underflow beyond), "
                         f"got {degree}")
    return _rule(degree)


@cache
def _legendre(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    t, w = np.polynomial.legendre.leggauss(nodes)
    t, w = (t + 1.0) / 2.0, w / 2.0
    t.flags.writeable = False
    w.flags.writeable = False
    return t, w


def gauss_legendre_unit(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of the ``nodes``-point Gauss–Legendre rule on [0, 1] (cached, read-only, float64).

    ∫₀¹ f(t) dt ≈ Σ_i w_i f(t_i), exact for polynomials of degree < 2·nodes (the integral Taylor forms of
    :mod:`ntkbook.linearization`, whose integrands are smooth along a segment).
    """
    return _legendre(V.positive_int("nodes", nodes))


def gaussian_expectation(g: Callable[[np.ndarray], Any], *, mean: float = 0.0, std: float = 1.0,
                         degree: int = 151) -> float:
    """E[g(w)] for w ~ N(mean, std²) by ``degree``-point Gauss–Hermite quadrature (float64).

    ``g`` must accept a float64 array of nodes, shape ``(degree,)``, and return an array of the same
    shape (NumPy or JAX).  Used for the infinite-width limits, e.g. K(x, x) → x² E[σ'(wx)²] (Eq. 10
    of Liu, Zhu & Belkin 2020).
    """
    V.callable_("g", g)
    std = V.positive_float("std", std)
    t, w = gauss_hermite(degree)
    values = np.asarray(g(mean + std * t), dtype=np.float64)
    if values.shape != t.shape:
        raise ValueError(f"g must map an array of shape {t.shape} to the same shape, got {values.shape}")
    return float(np.dot(w, values))


def hermite_basis(r_max: int, t: Any) -> np.ndarray:
    """h_0(t), …, h_{r_max}(t) with h_r = He_r/√(r!), shape ``(r_max + 1, *t.shape)``, float64.

    The normalized probabilists' Hermite polynomials of Appendix H (Oymak & Soltanolkotabi 2020),
    orthonormal for N(0, 1); stable three-term recurrence h_{r+1}(t) = (t h_r(t) − √r h_{r−1}(t))/√(r + 1).
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


def hermite_projection(f: Callable[[np.ndarray], Any], r_max: int, *, degree: int = 200) -> np.ndarray:
    """μ_0(f), …, μ_{r_max}(f), μ_r(f) = E[f(g) h_r(g)], by ``degree``-point Gauss–Hermite (float64).

    Shape ``(r_max + 1,)``.  Exact for polynomials f of degree < 2·degree − r_max; spectrally accurate
    for analytic f; algebraic (see the module docstring) for f with kinks or jumps.
    """
    V.callable_("f", f)
    r_max = V.positive_int("r_max", r_max, minimum=0)
    t, w = gauss_hermite(degree)
    values = np.asarray(f(t), dtype=np.float64)
    if values.shape != t.shape:
        raise ValueError(f"f must map an array of shape {t.shape} to the same shape, got {values.shape}")
    return hermite_basis(r_max, t) @ (w * values)


def bivariate_expectation(f: Callable[[np.ndarray], Any], rho: Any, g: Callable[[np.ndarray], Any] | None = None,
                          *, degree: int = 64, chunk: int = 2048) -> np.ndarray:
    """E[f(u) g(v)] for standard normals u, v with correlation ``rho`` (g = f when omitted), float64.

    Tensor-product Gauss–Hermite: u = t_i, v = ρ t_i + √(1−ρ²) t_j, weights w_i w_j, on a
    ``degree × degree`` grid for every entry of ``rho`` (any shape, entries in [−1, 1]; processed
    ``chunk`` entries at a time to bound memory at chunk·degree² floats).  Returns an array of the
    shape of ``rho``.  This is the "quadrature" route to the dual kernels K_f(ρ) = E[f(u)f(v)]; it
    shares with the Hermite-series route only the node table (at a different degree by default).
    """
    V.callable_("f", f)
    if g is not None:
        V.callable_("g", g)
    chunk = V.positive_int("chunk", chunk)
    rho = np.asarray(rho, dtype=np.float64)
    if np.any(np.abs(rho) > 1 + 1e-12):
        raise ValueError("rho must lie in [-1, 1]")
    g = f if g is None else g
    t, w = gauss_hermite(degree)
    ft = np.asarray(f(t), dtype=np.float64)
    flat = rho.ravel()
    out = np.empty_like(flat)
    for start in range(0, flat.size, chunk):
        r = flat[start:start + chunk, None, None]
        v = r * t[None, :, None] + np.sqrt(np.maximum(1.0 - r * r, 0.0)) * t[None, None, :]
        inner = np.asarray(g(v), dtype=np.float64) @ w  # over j
        out[start:start + chunk] = inner @ (w * ft)  # over i
    return out.reshape(rho.shape)
