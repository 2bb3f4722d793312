"""Wrappers around any model: a non-linear output map (Eq. 26) and the linearization."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp

from .. import _validation as V
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


def linearize(apply_fn: Callable[[PyTree, Any], Array], params0: PyTree) -> Callable[[PyTree, Any], Array]:
    """The first-order Taylor model around ``params0`` (the "linearized network"):

    f_lin(w; x) = f(w₀; x) + ∇_w f(w₀; x)ᵀ (w − w₀),

    computed with one Jacobian-vector product (no Jacobian is formed).  It is linear in w with the
    non-linear feature map φ(x) = ∇_w f(w₀; x), so by Proposition 2.2 its tangent kernel is constant.
    """
    V.callable_("apply_fn", apply_fn)
    V.pytree_of_arrays("params0", params0)

    def apply_lin(params: PyTree, x: Any) -> Array:
        delta = jax.tree_util.tree_map(jnp.subtract, params, params0)
        f0, df = jax.jvp(lambda p: apply_fn(p, x), (params0,), (delta,))
        return f0 + df

    return apply_lin
