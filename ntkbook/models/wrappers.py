"""A wrapper around any model: a non-linear output map (Eq. 26)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax

from ..activations import Activation, get_activation
from .common import STATIC, Array, PyTree

# ---------------------------------------------------------------------------------------------
# Non-linear output layer, Eq. (26)
# ---------------------------------------------------------------------------------------------

OUTPUT_MAPS = ("softmax",)
"""Output maps φ that are not elementwise activations."""


@jax.tree_util.register_dataclass
@dataclass(frozen=True, eq=False)
class NonLinearOutput:
    """f̃(w; x) = φ(f(w; x)) — Eq. (26): any model with a non-linear map on its output.

    ``phi`` is an elementwise activation (applied to every output) or ``"softmax"`` (over the k
    outputs).  The parameters are those of the base model.
    """

    base: Any
    phi: Activation | str = field(metadata=STATIC)

    def output_map(self, f: Array) -> Array:
        if self.phi == "softmax":
            return jax.nn.softmax(f, axis=-1)
        return self.phi(f)

    def apply(self, params: PyTree, x: Any) -> Array:
        return self.output_map(self.base.apply(params, x))


def nonlinear_output(base: Any, phi: str | Activation) -> NonLinearOutput:
    """Wrap ``base`` (any object with ``apply(params, x)``) with the output map φ of Eq. (26)."""
    if not hasattr(base, "apply") or not callable(base.apply):
        raise TypeError(f"base must be a model with an apply(params, x) method, got {type(base).__name__}")
    if isinstance(phi, str) and phi in OUTPUT_MAPS:
        return NonLinearOutput(base=base, phi=phi)
    return NonLinearOutput(base=base, phi=get_activation(phi))
