"""Helpers shared by every architecture: input validation, NTK-scaled dense products, pytree metadata."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from .. import _validation as V

Array = jax.Array
PyTree = Any
HIGHEST = jax.lax.Precision.HIGHEST

STATIC = dict(static=True)
"""``dataclasses.field(metadata=STATIC)`` marks a configuration field (not a pytree leaf)."""


def inputs(x: Any, input_dim: int) -> Array:
    """Validate inputs and return them as ``(n, d)`` (a model with d = 1 also accepts ``(n,)``)."""
    x = V.array("x", x, ndim=(1, 2))
    if x.ndim == 1:
        if input_dim != 1:
            raise ValueError(f"x must have shape (n, {input_dim}); got shape {tuple(x.shape)}")
        x = x[:, None]
    if x.shape[1] != input_dim:
        raise ValueError(f"x must have shape (n, {input_dim}); got shape {tuple(x.shape)}")
    return x


def dense(a: Array, w: Array) -> Array:
    """a @ wᵀ / √fan_in with full float32 precision on every backend (no TF32 on GPUs)."""
    return jnp.matmul(a, w.T, precision=HIGHEST) / math.sqrt(w.shape[1])


def squeeze_output(f: Array) -> Array:
    """(n, 1) → (n,); (n, k) unchanged for k > 1."""
    return f[:, 0] if f.shape[-1] == 1 else f
