"""The fixed output layer of Oymak & Soltanolkotabi (2020), Theorem 2.1 (shared by chapter 9's
gradient-descent experiments and its phase transitions, Figure 2)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validation as V


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
