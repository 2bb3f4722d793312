"""The one-hidden-layer network of Oymak & Soltanolkotabi (2020), Eq. (1.1), with the initialization of their
Theorem 2.1 (chapter 9: its Jacobian lemmas, gradient descent, SGD, and the phase transitions of Figure 2).

f(x; W) = vᵀφ(Wx), W ∈ ℝ^{k×d} trained from W₀ with i.i.d. N(0, 1) entries, v ∈ ℝ^k fixed with half of its
entries +‖y‖/√(kn) and half −‖y‖/√(kn).  There is no 1/√k or 1/√d factor: in the book's models this is the
LeCun-parameterized :class:`~ntkbook.models.dense.ShallowNetwork` with output weights v, whose tangent kernel
(:func:`ntkbook.empirical_ntk`) is the Jacobian Gram 𝒥𝒥ᵀ = (φ'(XWᵀ)diag(v)²φ'(WXᵀ)) ⊙ XXᵀ of Section 6.1.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validation as V
from ..activations import Activation, get_activation
from ..random import normal
from .dense import ShallowNetwork


def output_weights(k: int, y_norm: float, n: int, *, dtype=jnp.float32) -> jax.Array:
    """v of Theorem 2.1: ⌊k/2⌋ entries +‖y‖/√(kn), ⌊k/2⌋ entries −‖y‖/√(kn), and a 0 if k is odd.

    (Footnote 1 of the paper: for odd k, ⌊(k−1)/2⌋ entries of each sign and one zero.)  Then
    1ᵀv = 0, ‖v‖_∞ = ‖y‖/√(kn) and ‖v‖₂ = ‖y‖/√n·√(2⌊k/2⌋/k).  Shape (k,).
    """
    k = V.positive_int("k", k)
    n = V.positive_int("n", n)
    y_norm = V.positive_float("y_norm", y_norm)
    half = k // 2
    signs = np.concatenate([np.ones(half), -np.ones(half), np.zeros(k - 2 * half)])
    return jnp.asarray(signs * y_norm / math.sqrt(k * n), dtype=dtype)


def network(key: jax.Array, k: int, x: Any, y: Any, *, activation: str | Activation = "softplus"
            ) -> tuple[ShallowNetwork, dict[str, jax.Array]]:
    """The network of Eq. (1.1) for the data (x, y), initialized as in Theorem 2.1.

    Args:
        key: draws W₀ (k, d) with i.i.d. N(0, 1) entries, in the dtype of ``x``.
        k: the number of hidden units.
        x, y: the training inputs (n, d) and labels (n,); ``y`` must be concrete (‖y‖ sets v).
        activation: φ (a registry name or an :class:`~ntkbook.activations.Activation`).

    Returns:
        ``(model, {"w": W₀})``: ``model.apply({"w": W}, X)`` is φ(XWᵀ)v, ``model.v`` is
        :func:`output_weights` (k, ‖y‖, n).
    """
    x = V.array("x", x)
    if x.ndim != 2:
        raise ValueError(f"x must be (n, d), got shape {x.shape}")
    n, d = x.shape
    y_norm = float(np.linalg.norm(np.asarray(y, np.float64)))
    v = output_weights(k, y_norm, n, dtype=x.dtype)
    model = ShallowNetwork(v=v, activation=get_activation(activation), input_dim=d, parameterization="lecun")
    return model, {"w": normal(key, (int(k), d), x.dtype)}
