"""Gaussian inputs with the normalization of :mod:`.digits` (‖x‖ = √d) and labels from a teacher.

The synthetic counterpart of the 20 images of Appendix B of Liu, Zhu & Belkin (2022): n points
x_i = √d · g_i/‖g_i‖ with g_i ~ N(0, I_d) (uniform on the sphere of radius √d, so the first
pre-activation W⁽¹⁾x/√d has unit variance, as for the standardized images), and labels
y_i = sign(⟨t, x_i⟩) of a random linear teacher t ~ N(0, I_d) — two classes.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from .. import _validation as V
from ..random import normal

Array = jax.Array


def gaussian_inputs(key: Array, n: int, d: int, *, dtype: Any = jnp.float32) -> Array:
    """``n`` points uniform on the sphere of radius √d in ℝ^d, shape ``(n, d)``."""
    n = V.positive_int("n", n)
    d = V.positive_int("d", d)
    dtype = V.float_dtype("dtype", dtype)
    g = normal(key, (n, d), dtype)
    return math.sqrt(d) * g / jnp.linalg.norm(g, axis=1, keepdims=True)


def two_classes(key: Array, n: int = 20, d: int = 64, *, dtype: Any = jnp.float32) -> tuple[Array, Array]:
    """Inputs of :func:`gaussian_inputs` and labels ±1 from a random linear teacher.

    Returns:
        ``(x, y)`` of shapes ``(n, d)`` and ``(n,)``.
    """
    k_x, k_t = jax.random.split(key)
    x = gaussian_inputs(k_x, n, d, dtype=dtype)
    teacher = normal(k_t, (d,), x.dtype)
    y = jnp.where(x @ teacher >= 0, 1.0, -1.0).astype(x.dtype)
    return x, y
