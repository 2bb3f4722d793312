"""Khatri–Rao products and the data-diversity quantities of Oymak & Soltanolkotabi (2020).

Section 1.3 of the paper defines, for A ∈ ℝ^{p×m} and B ∈ ℝ^{p×n} with rows A_i, B_i,

    A ∗ B = [A_1 ⊗ B_1; …; A_p ⊗ B_p] ∈ ℝ^{p×mn}     (row-wise Kronecker product),

and the r-way power X^{∗r} ∈ ℝ^{n×d^r} with rows x_i ⊗ ⋯ ⊗ x_i (r factors).  The identity that makes
these matrices computable is

    (A ∗ B)(A ∗ B)ᵀ = (AAᵀ) ⊙ (BBᵀ),   hence   X^{∗r}(X^{∗r})ᵀ = (XXᵀ)^{⊙r},

because ⟨a ⊗ b, a' ⊗ b'⟩ = ⟨a, a'⟩⟨b, b'⟩.  So σ_min(X^{∗r})² is the smallest eigenvalue of an n×n
Hadamard power of the Gram matrix — no n×d^r matrix is ever formed (:func:`sigma_min_power`).

Conventions: σ_min of an n×D matrix is its n-th singular value (0 when n > D or the rows are
dependent), i.e. √λ_min of the n×n Gram matrix.  Going through the Gram matrix squares the
condition number: in float64, λ_min is resolved down to about 16·n·ε·‖G‖ (:func:`gram_resolution`),
so σ_min down to about √(16nε)·‖X^{∗r}‖ ≈ 1e-7·‖X^{∗r}‖; below that it is reported as 0.  Functions
accept NumPy or JAX arrays and compute in float64 with NumPy/SciPy (dense n×n eigenproblems).

κ(X) = √(d/n)·‖X‖ / σ_min²(X ∗ X) is the data constant of Theorem 2.1 (Eq. 2.2).
"""

from __future__ import annotations

from math import comb
from typing import Any

import numpy as np

from . import _validation as V
from .eigen import lambda_min


def khatri_rao(a: Any, b: Any) -> np.ndarray:
    """Row-wise Kronecker product A ∗ B (Section 1.3): row i is A_i ⊗ B_i, shape ``(p, m·n)``.

    Args:
        a: ``(p, m)`` array.
        b: ``(p, n)`` array with the same number of rows.
    """
    a = V.numpy_array("a", a, ndim=2)
    b = V.numpy_array("b", b, ndim=2)
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"a and b must have the same number of rows, got {a.shape[0]} and {b.shape[0]}")
    return (a[:, :, None] * b[:, None, :]).reshape(a.shape[0], -1)


def khatri_rao_power(x: Any, r: int) -> np.ndarray:
    """The r-way Khatri–Rao power X^{∗r} (Section 1.3, Appendix H), shape ``(n, d**r)``.

    ``r = 0`` gives the column of ones (X^{∗0}(X^{∗0})ᵀ = 11ᵀ = (XXᵀ)^{⊙0}).  Forms the matrix
    explicitly: for small d**r only (a reference for the Gram route).
    """
    x = V.numpy_array("x", x, ndim=2)
    r = V.positive_int("r", r, minimum=0)
    n, d = x.shape
    if d**r > 5_000_000 // max(n, 1):
        raise ValueError(f"X^(*{r}) would have {n}×{d**r} entries; use hadamard_gram/sigma_min_power instead")
    out = np.ones((n, 1))
    for _ in range(r):
        out = khatri_rao(out, x)
    return out


def hadamard_gram(x: Any, r: int = 2) -> np.ndarray:
    """(XXᵀ)^{⊙r} = X^{∗r}(X^{∗r})ᵀ, shape ``(n, n)``, without forming X^{∗r}."""
    x = V.numpy_array("x", x, ndim=2)
    r = V.positive_int("r", r, minimum=0)
    return (x @ x.T) ** r


def gram_resolution(g: np.ndarray) -> float:
    """16·n·ε·‖G‖_∞ (≥ 16·n·ε·‖G‖₂ for symmetric G): eigenvalues of a computed n×n Gram matrix below
    this are rounding noise (backward error of the symmetric eigensolver, with a safety factor)."""
    return 16.0 * g.shape[0] * float(np.finfo(np.float64).eps) * float(np.abs(g).sum(axis=1).max())


def _sigma2(g: np.ndarray) -> float:
    """λ_min(G) as σ²_min, set to 0 when it is below :func:`gram_resolution` (unresolved)."""
    lam = float(lambda_min(g))  # float64, symmetrized (ntkbook.eigen)
    return lam if lam > gram_resolution(g) else 0.0


def sigma_min_power(x: Any, r: int = 2) -> float:
    """σ_min(X^{∗r}) = √λ_min((XXᵀ)^{⊙r}) (the n-th singular value of X^{∗r}); 0 when λ_min is
    below the rounding level of the Gram matrix (:func:`gram_resolution`)."""
    return float(np.sqrt(_sigma2(hadamard_gram(x, r))))


def sigma_min_khatri_rao(x: Any) -> float:
    """σ_min(X ∗ X) — the data quantity of Theorems 2.1 and 2.3 (through the n×n Gram matrix)."""
    return sigma_min_power(x, 2)


def spectral_norm(x: Any) -> float:
    """‖X‖ = σ_max(X)."""
    x = V.numpy_array("x", x, ndim=2)
    return float(np.linalg.norm(x, 2))


def kappa(x: Any) -> float:
    """κ(X) = √(d/n)·‖X‖ / σ_min²(X ∗ X) (Eq. 2.2); ``inf`` when σ_min(X ∗ X) = 0."""
    x = V.numpy_array("x", x, ndim=2)
    n, d = x.shape
    s2 = _sigma2(hadamard_gram(x, 2))
    return float(np.sqrt(d / n) * spectral_norm(x) / s2) if s2 > 0 else float("inf")


def symmetric_dimension(d: int, r: int = 2) -> int:
    """dim of the symmetric tensors of order r on ℝ^d = C(d + r − 1, r): the rank bound of X^{∗r}.

    The rows x ⊗ ⋯ ⊗ x are symmetric tensors, so rank(X^{∗r}) ≤ C(d+r−1, r) (d(d+1)/2 for r = 2) and
    σ_min(X^{∗r}) = 0 as soon as n exceeds it.
    """
    d = V.positive_int("d", d)
    r = V.positive_int("r", r, minimum=0)
    return comb(d + r - 1, r)


def marchenko_pastur_edge(n: int, d: int) -> float:
    """Heuristic prediction (1 − √(n/D))², D = d(d+1)/2, for σ_min²(X ∗ X) with X uniform on the sphere.

    The rows of X ∗ X are unit vectors in the D-dimensional space of symmetric matrices whose
    covariance, apart from the direction of the identity, is nearly isotropic; the lower edge of the
    Marchenko–Pastur law for an n×D matrix with such rows is (1 − √(n/D))².  Not a theorem of the
    paper — a yardstick for the measurements (0 for n ≥ D).
    """
    n = V.positive_int("n", n)
    big_d = symmetric_dimension(d, 2)
    return float(max(1.0 - np.sqrt(n / big_d), 0.0) ** 2)


def data_summary(x: Any, orders: tuple[int, ...] = (1, 2, 3)) -> dict[str, float]:
    """‖X‖, σ_min(X^{∗r}) for each r in ``orders``, κ(X) and the separation δ of Assumption 1."""
    x = V.numpy_array("x", x, ndim=2)
    n, d = x.shape
    g = x @ x.T
    out: dict[str, float] = {"n": n, "d": d, "norm": spectral_norm(x)}
    for r in orders:
        out[f"sigma_min_{r}"] = float(np.sqrt(_sigma2(g**r)))
    s2 = _sigma2(g**2)
    out["kappa"] = float(np.sqrt(d / n) * out["norm"] / s2) if s2 > 0 else float("inf")
    off = np.abs(g - np.diag(np.diag(g)))
    out["separation"] = float(np.sqrt(max(2.0 - 2.0 * off.max(), 0.0))) if n > 1 else float("nan")
    return out
