"""The small, well-conditioned training set of Chapters 4, 5 and 5b: points on a half circle."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from .. import _validation as V

__all__ = ["circle_data"]


def circle_data(num_inputs: int, *, radius: float = 3.0, frequency: int = 2,
                dtype: Any = jnp.float32) -> tuple[jax.Array, jax.Array]:
    """n inputs on a half circle and smooth labels: xₖ = r(cos θₖ, sin θₖ), yₖ = cos(νθₖ), θₖ = πk/n.

    The angles avoid antipodal pairs (networks without biases are odd functions of x, so x and −x
    cannot carry independent labels), and the radius r = 3 makes the pre-activations w·x/√2 of
    order 2, where tanh is clearly non-linear: the tangent kernel on these points is well
    conditioned (λ_max/λ_min ≈ 15–25 for n = 6).

    Args:
        num_inputs: n ≥ 1.
        radius: r > 0.
        frequency: ν ≥ 0 of the labels.
        dtype: floating dtype of both arrays (float64 only where a check needs it).

    Returns:
        ``(x, y)`` of shapes (n, 2) and (n,).
    """
    n = V.positive_int("num_inputs", num_inputs)
    radius = V.positive_float("radius", radius)
    frequency = V.positive_int("frequency", frequency, minimum=0)
    theta = jnp.pi * jnp.arange(n, dtype=dtype) / n
    x = radius * jnp.stack([jnp.cos(theta), jnp.sin(theta)], axis=1)
    return x.astype(dtype), jnp.cos(frequency * theta).astype(dtype)
