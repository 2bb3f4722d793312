"""The (2,2,1)-norm of order-3 tensors — Definition 2.2 of Liu, Zhu & Belkin (2020).

‖T‖_{2,2,1} := sup_{‖x‖=‖z‖=1} Σ_k | Σ_{i,j} T_ijk x_i z_j |,   T ∈ ℝ^{d1×d2×d3}      (Eq. 5)

**Sign-vector identity.**  Since |a| = max_{s=±1} s·a, and the supremum over (x, z) of a bilinear
form is a matrix spectral norm,

‖T‖_{2,2,1} = sup_{x,z} max_{s∈{±1}^{d3}} xᵀ(Σ_k s_k T_k) z = max_{s∈{±1}^{d3}} ‖Σ_k s_k T_k‖₂,

where T_k = T[:, :, k].  s and −s give the same matrix up to sign, so 2^{d3−1} sign vectors suffice.

:func:`norm_221` enumerates them when d3 ≤ 16 (exact).  Otherwise it returns a certified interval:

* lower bound — ‖Σ_k s_k T_k‖₂ for the best sign vector found by a local search over sign vectors:
  alternating maximization (given (x, z): s_k = sign(xᵀT_k z); given s: (x, z) = top singular pair of
  Σ s_k T_k) from random restarts, then single sign flips while they help.  Every value it reports is
  attained by a feasible s, so it never exceeds the norm;
* upper bound — the smallest of three relaxations, each ≥ the norm:

  - ‖Σ_k |T_k|‖₂ (entrywise absolute values; Perron–Frobenius), exact for "diagonal" tensors;
  - the sum over groups of at most ``group_size`` slices of each group's exact (2,2,1)-norm
    (subadditivity in k; computed only when the other two do not already meet the lower bound
    and the cost is moderate);
  - √d3 · ‖T₍₃₎‖₂, with T₍₃₎ ∈ ℝ^{d3×d1d2} the mode-3 unfolding (Cauchy–Schwarz over k).

Computations are in float64 NumPy: these are explicit, small tensors and the result must be exact
to float precision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _validation as V

MAX_EXACT_D3 = 16
"""Largest d3 for which :func:`norm_221` enumerates all sign vectors."""
_CHUNK_BYTES = 128 << 20


@dataclass(frozen=True)
class Norm221Result:
    """Result of :func:`norm_221`.

    Attributes:
        lower: a value attained by a sign vector (≤ the norm).
        upper: an upper bound (≥ the norm).
        exact: True when lower == upper to float precision (always when d3 ≤ 16).
        signs: the best sign vector found, shape (d3,).
        method: ``"enumeration"`` or ``"bounds"``.
    """

    lower: float
    upper: float
    exact: bool
    signs: np.ndarray
    method: str

    @property
    def value(self) -> float:
        """The norm when ``exact``; otherwise raises (use ``lower``/``upper``)."""
        if not self.exact:
            raise ValueError(f"the (2,2,1)-norm is only bracketed: [{self.lower:.6g}, {self.upper:.6g}]")
        return self.lower


def sign_vectors(d3: int) -> np.ndarray:
    """All 2^{d3−1} sign vectors with s_0 = +1, shape (2^{d3−1}, d3)."""
    d3 = V.positive_int("d3", d3)
    if d3 > 24:
        raise ValueError(f"d3 = {d3}: 2^{d3 - 1} sign vectors is too many to enumerate")
    idx = np.arange(2 ** (d3 - 1), dtype=np.int64)[:, None]
    bits = (idx >> np.arange(d3 - 1, dtype=np.int64)) & 1
    return np.concatenate([np.ones((idx.shape[0], 1)), 1.0 - 2.0 * bits], axis=1)


def _spectral_norms(mats: np.ndarray) -> np.ndarray:
    """Largest singular value of each matrix in a stack (b, d1, d2)."""
    b, d1, d2 = mats.shape
    if min(d1, d2) == 1:
        return np.linalg.norm(mats.reshape(b, -1), axis=1)
    return np.linalg.svd(mats, compute_uv=False)[:, 0]


def _enumerate(t: np.ndarray) -> tuple[float, np.ndarray]:
    d1, d2, d3 = t.shape
    signs = sign_vectors(d3)
    flat = t.reshape(d1 * d2, d3)
    chunk = max(1, _CHUNK_BYTES // (8 * d1 * d2))
    best, best_s = -1.0, signs[0]
    for start in range(0, signs.shape[0], chunk):
        s = signs[start : start + chunk]
        mats = (flat @ s.T).T.reshape(-1, d1, d2)
        norms = _spectral_norms(mats)
        i = int(np.argmax(norms))
        if norms[i] > best:
            best, best_s = float(norms[i]), s[i]
    return best, best_s


def _alternating_maximization(t: np.ndarray, restarts: int, rng: np.random.Generator, polish: int = 4
                              ) -> tuple[float, np.ndarray]:
    """Best sign vector of max_s ‖Σ_k s_k T_k‖₂ found by alternating maximization with restarts, then a
    single-flip local search (a lower bound of the (2,2,1)-norm: a combinatorial search over sign vectors,
    no gradient and no ball).

    Alternating maximization of xᵀ(Σ_k s_k T_k)z over the signs s and the unit vectors (x, z): given
    (x, z), the best s is s_k = sign(xᵀT_k z); given s, the best (x, z) is the top singular pair of
    Σ s_k T_k — each step can only increase the objective.  The ``polish`` best results are then improved
    by flipping one sign at a time while that increases ‖Σ s_k T_k‖ (a 1-flip local optimum).
    """
    d1, d2, d3 = t.shape
    flat = t.reshape(d1 * d2, d3)

    def top_pair(s: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        u, sv, vt = np.linalg.svd((flat @ s).reshape(d1, d2), full_matrices=False)
        return float(sv[0]), u[:, 0], vt[0]

    def maximize(s: np.ndarray) -> tuple[float, np.ndarray]:
        """Alternate s ← sign(xᵀT_k z) and (x, z) ← top singular pair of Σ s_k T_k from the signs ``s``
        until the signs repeat or the value stops increasing."""
        s = np.where(s == 0, 1.0, s)
        val, x, z = top_pair(s)
        for _ in range(100):
            new_s = np.sign(np.einsum("i,ijk,j->k", x, t, z))
            new_s = np.where(new_s == 0, 1.0, new_s)
            if np.array_equal(new_s, s):
                break
            new_val, x, z = top_pair(new_s)
            if new_val <= val:
                break
            s, val = new_s, new_val
        return val, s

    def flip_search(val: float, s: np.ndarray) -> tuple[float, np.ndarray]:
        s = s.copy()
        m = (flat @ s).reshape(d1, d2)
        improved = True
        while improved:
            improved = False
            for k in range(d3):
                trial = m - 2.0 * s[k] * t[:, :, k]
                v = float(np.linalg.norm(trial, 2))
                if v > val * (1 + 1e-14):
                    s[k], m, val, improved = -s[k], trial, v, True
        return val, s

    starts = [np.sign(flat.T @ flat[:, 0] + 1e-300)]  # a data-driven start, then random ones
    starts += [rng.choice([-1.0, 1.0], size=d3) for _ in range(restarts)]
    results = sorted((maximize(s) for s in starts), key=lambda r: -r[0])
    polished = [flip_search(v, s) for v, s in results[:polish]]
    best, best_s = max(polished + results[:1], key=lambda r: r[0])
    return best, best_s * (1.0 if best_s[0] >= 0 else -1.0)


GROUP_BOUND_BUDGET = 2e9
"""Rough flop budget of the grouped upper bound (2^{g−1} SVDs per group of g slices)."""


def _upper_bound(t: np.ndarray, group_size: int, lower: float) -> float:
    """min of the three relaxations; the expensive grouped one only if the cheap ones do not
    already meet ``lower`` and its cost fits :data:`GROUP_BOUND_BUDGET`."""
    d1, d2, d3 = t.shape
    bound = min(float(np.linalg.norm(np.abs(t).sum(axis=2), 2)),
                float(np.sqrt(d3) * np.linalg.norm(t.reshape(d1 * d2, d3), 2)))
    if bound <= lower * (1 + 1e-12):
        return bound
    cost = -(-d3 // group_size) * 2 ** (group_size - 1) * d1 * d2 * min(d1, d2)
    if cost <= GROUP_BOUND_BUDGET:
        groups = [t[:, :, k : k + group_size] for k in range(0, d3, group_size)]
        bound = min(bound, float(sum(_enumerate(g)[0] for g in groups)))
    return bound


def norm_221(
    T: Any,
    *,
    max_exact_d3: int = MAX_EXACT_D3,
    restarts: int = 32,
    group_size: int = 8,
    seed: int = 0,
) -> Norm221Result:
    """The (2,2,1)-norm of an order-3 tensor (Definition 2.2, Eq. 5).

    Args:
        T: array of shape (d1, d2, d3).
        max_exact_d3: enumerate all sign vectors when d3 ≤ this (≤ 16 by default; cost
            2^{d3−1} spectral norms of d1 × d2 matrices).
        restarts: random restarts of the alternating maximization (lower bound) when d3 is larger.
        group_size: slices per group in the grouped upper bound (≤ ``max_exact_d3``).
        seed: seed of the restarts (the result is deterministic).

    Returns:
        :class:`~ntkbook.norms.Norm221Result` with ``lower``, ``upper``, ``exact`` and the best ``signs``;
        ``exact`` (lower == upper to float precision) whenever d3 ≤ ``max_exact_d3``.
    """
    t = V.numpy_array("T", T, ndim=3)
    max_exact_d3 = V.positive_int("max_exact_d3", max_exact_d3)
    if max_exact_d3 > 24:
        raise ValueError("max_exact_d3 must be <= 24 (2^23 sign vectors)")
    restarts = V.positive_int("restarts", restarts, minimum=0)
    group_size = V.positive_int("group_size", group_size)
    if group_size > max_exact_d3:
        raise ValueError(f"group_size ({group_size}) must be <= max_exact_d3 ({max_exact_d3})")
    d3 = t.shape[2]
    if d3 <= max_exact_d3:
        value, signs = _enumerate(t)
        return Norm221Result(value, value, True, signs, "enumeration")
    lower, signs = _alternating_maximization(t, restarts, np.random.default_rng(seed))
    upper = max(_upper_bound(t, group_size, lower), lower)
    exact = bool(upper - lower <= 1e-12 * max(upper, np.finfo(np.float64).tiny))
    return Norm221Result(lower, upper, exact, signs, "bounds")


def contract_third(T: Any, v: Any) -> np.ndarray:
    """A_ij = Σ_k T_ijk v_k (the matrix of Proposition 2.1), float64."""
    t = V.numpy_array("T", T, ndim=3)
    v = V.numpy_array("v", v, ndim=1)
    if v.shape[0] != t.shape[2]:
        raise ValueError(f"v must have length d3 = {t.shape[2]}, got {v.shape[0]}")
    return np.einsum("ijk,k->ij", t, v)


__all__ = ["MAX_EXACT_D3", "Norm221Result", "contract_third", "norm_221", "sign_vectors"]
