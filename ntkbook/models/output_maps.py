"""The output map φ of Chapters 5 and 5b (Eq. 26 and Theorem 5.1 of Liu–Zhu–Belkin 2020) and its
derivatives; wrap a model with it through :func:`ntkbook.models.wrappers.nonlinear_output`.
"""

from __future__ import annotations

import jax

from ..activations import Activation, get_activation

__all__ = ["PHI", "PHI_FLOOR", "phi_derivatives"]

PHI = get_activation("z+logcosh(z)/2")
"""φ(z) = z + ½ log cosh z (the registry's ``"z+logcosh(z)/2"``): φ'(z) = 1 + ½ tanh z ∈ (½, 3/2),
φ''(z) = ½ sech² z ∈ (0, ½].

A "softplus-like" map with a floor on its slope: it grows like z/2 for z → −∞ and like 3z/2 for
z → +∞, so |φ'| ≥ ρ = ½ everywhere (Theorem 5.1's hypothesis), while φ'' > 0 everywhere (so the
first term of Eq. 29 never vanishes) and is largest near 0, where a network output at
initialization typically is."""

PHI_FLOOR = PHI.derivative_floor
"""inf_z |φ'(z)| = ½ for :data:`PHI` — the ρ of Theorem 5.1."""


def phi_derivatives(phi: Activation, f: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(φ'(f), φ''(f)) elementwise (the registry's derivatives), same shape as ``f``."""
    return phi.derivative(f, 1), phi.derivative(f, 2)
