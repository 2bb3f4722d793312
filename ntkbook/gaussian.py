"""Expectations over Gaussian variables by Gauss–Hermite quadrature.

E_{w~N(μ, s²)}[g(w)] = (1/√(2π)) ∫ g(μ + s t) e^{−t²/2} dt ≈ Σ_i ω_i g(μ + s t_i) / √(2π),

with the nodes t_i and weights ω_i of the probabilists' Hermite polynomials (NumPy's
``hermegauss``).  Exact for polynomials of degree < 2·degree; spectrally accurate for smooth g
(tanh, sigmoid, softplus derivatives); only O(1/degree) for functions with kinks (ReLU's step).
Used for the infinite-width limits, e.g. K(x, x) → x² E[σ'(wx)²] (Eq. 10).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np

from . import _validation as V


@cache
def _nodes(degree: int) -> tuple[np.ndarray, np.ndarray]:
    t, w = np.polynomial.hermite_e.hermegauss(degree)
    return t, w / np.sqrt(2.0 * np.pi)


def gaussian_expectation(g: Callable[[np.ndarray], np.ndarray], *, mean: float = 0.0, std: float = 1.0,
                         degree: int = 151) -> float:
    """E[g(w)] for w ~ N(mean, std²) by ``degree``-point Gauss–Hermite quadrature (float64).

    ``g`` must accept a float64 array of nodes and return an array of the same shape (NumPy or JAX).
    """
    V.callable_("g", g)
    std = V.positive_float("std", std)
    degree = V.positive_int("degree", degree)
    t, w = _nodes(degree)
    values = np.asarray(g(mean + std * t), dtype=np.float64)
    if values.shape != t.shape:
        raise ValueError(f"g must map an array of shape {t.shape} to the same shape, got {values.shape}")
    return float(np.dot(w, values))
