"""Points drawn uniformly from the unit sphere S^{d−1} ⊂ ℝ^d (Oymak & Soltanolkotabi 2020, Cor. 2.2, Section 4).

A standard Gaussian vector divided by its norm is uniform on the sphere (rotation invariance of
N(0, I_d)); :func:`unit_scale_input` scales it to the sphere of radius √d, the inputs of Liu, Zhu &
Belkin (2020, Section 3).  The helpers below also build the degenerate data sets the chapters use to show what
"data diversity" means: duplicated points, nearly collinear pairs and antipodal pairs.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from .. import _validation as V
from ..random import normal

Array = jax.Array


def normalize_rows(x: Array) -> Array:
    """Rows of ``x`` (shape ``(n, d)``) scaled to unit Euclidean norm."""
    x = V.array("x", x, ndim=2)
    norms = jnp.linalg.norm(x, axis=1, keepdims=True)
    if not V.is_tracer(norms) and bool(jnp.any(norms == 0)):
        raise ValueError("x has a zero row, which cannot be normalized")
    return x / norms


def uniform_sphere(key: Array, n: int, d: int, *, dtype=jnp.float32) -> Array:
    """``n`` i.i.d. points uniform on the unit sphere of ℝ^d, shape ``(n, d)``.

    For ``d = 1`` the "sphere" is {−1, +1} and the points are random signs.
    """
    n = V.positive_int("n", n)
    d = V.positive_int("d", d)
    dtype = V.float_dtype("dtype", dtype)
    g = normal(key, (n, d), dtype)
    return g / jnp.linalg.norm(g, axis=1, keepdims=True)


def unit_scale_input(key: Array, d: int, dtype: Any = jnp.float32) -> Array:
    """A random input x ∈ ℝ^d with ‖x‖ = √d (uniform on that sphere), so the first pre-activation
    W⁽¹⁾x/√d of an NTK-parameterized network has entries N(0, 1).  Shape ``(d,)``."""
    d = V.positive_int("d", d)
    g = normal(key, (d,), dtype)
    return g * (math.sqrt(d) / jnp.linalg.norm(g))


def with_duplicate(x: Array, source: int = 0, target: int = 1) -> Array:
    """A copy of ``x`` whose row ``target`` equals row ``source`` (two identical inputs)."""
    x = V.array("x", x, ndim=2)
    n = x.shape[0]
    for name, i in (("source", source), ("target", target)):
        V.positive_int(name, i, minimum=0)
        if i >= n:
            raise ValueError(f"{name} must be a row index < {n}, got {i}")
    if source == target:
        raise ValueError("source and target must be different rows")
    return x.at[target].set(x[source])


def with_near_duplicate(x: Array, epsilon: float, key: Array, source: int = 0, target: int = 1,
                        antipodal: bool = False) -> Array:
    """Row ``target`` replaced by a unit vector at angle ≈ ``epsilon`` from row ``source``.

    ``x_target = (x_source + ε u)/‖x_source + ε u‖`` with ``u`` a random unit vector orthogonal to
    ``x_source``, so the angle between the two rows is exactly arctan ε.  With ``antipodal=True``
    the new row is the negative of that vector (angle π − arctan ε): points that are nearly
    antipodal are just as indistinguishable to the quadratic features x ⊗ x as nearly equal ones.
    """
    x = V.array("x", x, ndim=2)
    epsilon = V.positive_float("epsilon", epsilon, allow_zero=True)
    n, d = x.shape
    if d < 2 and epsilon > 0:
        raise ValueError("a perturbation orthogonal to a point needs d >= 2")
    for name, i in (("source", source), ("target", target)):
        if not 0 <= i < n:
            raise ValueError(f"{name} must be a row index < {n}, got {i}")
    base = x[source]
    u = normal(key, (d,), x.dtype)
    u = u - jnp.dot(u, base) * base
    u = u / jnp.linalg.norm(u)
    new = base + epsilon * u
    new = new / jnp.linalg.norm(new)
    return x.at[target].set(-new if antipodal else new)


def separation(x: Array) -> float:
    """δ of Assumption 1: min over pairs i ≠ j of min(‖x_i − x_j‖, ‖x_i + x_j‖) (rows of unit norm).

    Computed from the Gram matrix: ‖x_i ∓ x_j‖² = 2 ∓ 2⟨x_i, x_j⟩, so δ² = 2 − 2 max_{i≠j} |⟨x_i, x_j⟩|.
    """
    x = V.array("x", x, ndim=2)
    if x.shape[0] < 2:
        raise ValueError("separation needs at least two points")
    g = jnp.abs(x @ x.T)
    g = g - jnp.diag(jnp.diag(g)) - jnp.eye(x.shape[0], dtype=x.dtype)  # diagonal → −1, never the max
    return float(jnp.sqrt(jnp.maximum(2.0 - 2.0 * jnp.max(g), 0.0)))
