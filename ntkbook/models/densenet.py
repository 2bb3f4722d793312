"""A small fully connected DenseNet in the NTK parameterization (Liu, Zhu & Belkin 2022, Appendix E).

Every layer reads the concatenation of *all* previous layers and the input (Huang et al. 2017):

    c⁽⁰⁾ = x,   α̃⁽ˡ⁾ = W⁽ˡ⁾ c⁽ˡ⁻¹⁾ / √dim c⁽ˡ⁻¹⁾,   α⁽ˡ⁾ = σ(α̃⁽ˡ⁾),
    c⁽ˡ⁾ = Concat[α⁽ˡ⁾, α⁽ˡ⁻¹⁾, …, α⁽¹⁾, x],                                           (Eq. 37)
    f = vᵀ c⁽ᴸ⁾ / √dim c⁽ᴸ⁾            (a linear output layer reading every layer and the input).

Weights are N(0, 1) and every layer divides by the square root of its fan-in, the size of the
concatenation it reads (the "m" of Eq. 37).  Each pre-activation is the sum of l linear functions,
α̃⁽ˡ⁾ = Σ_{l'<l} U⁽ˡ'⁾α⁽ˡ'⁾/√dim c⁽ˡ⁻¹⁾ + (x part), with U⁽ˡ'⁾ the block of columns of W⁽ˡ⁾ that reads
α⁽ˡ'⁾ — the observation behind Appendix E.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .. import _validation as V
from ..activations import Activation, get_activation
from ..random import normal
from .common import HIGHEST, STATIC, Array, PyTree, dense, inputs


class DenseForwardPass(NamedTuple):
    """Intermediate values of a :class:`DenseNet` on a batch.

    Attributes:
        pre: α̃⁽ˡ⁾, l = 1..L, each (n, m_l).
        post: α⁽ˡ⁾, l = 1..L, each (n, m_l).
        concat: c⁽ˡ⁾, l = 0..L (c⁽⁰⁾ = x), each (n, d + m_1 + … + m_l); layer l reads c⁽ˡ⁻¹⁾.
        output: f, (n,).
    """

    pre: list[Array]
    post: list[Array]
    concat: list[Array]
    output: Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True, eq=False)
class DenseNet:
    """The DenseNet of Eq. (37) with growth widths (m_1, …, m_L) and a linear output layer.

    Trainable parameters ``{"layers": [{"W": (m_l, d + m_1 + … + m_{l−1})}, ...], "v": (d + Σ m_l,)}``.
    The columns of W⁽ˡ⁾ are ordered like c⁽ˡ⁻¹⁾ = [α⁽ˡ⁻¹⁾, …, α⁽¹⁾, x].
    """

    widths: tuple[int, ...] = field(metadata=STATIC)
    activation: Activation = field(metadata=STATIC)
    input_dim: int = field(metadata=STATIC)

    @property
    def depth(self) -> int:
        return len(self.widths)

    def fan_in(self, layer: int) -> int:
        """dim c⁽ˡ⁻¹⁾ for layer l = 1..L (l = L + 1 is the output layer)."""
        return self.input_dim + sum(self.widths[: layer - 1])

    def column_slice(self, layer: int, source: int) -> slice:
        """Columns of W⁽ˡ⁾ that read α⁽ˢᵒᵘʳᶜᵉ⁾ (source < layer; source = 0 is the input x)."""
        if not 0 <= source < layer:
            raise ValueError(f"source must be in 0..{layer - 1}, got {source}")
        start = sum(self.widths[source: layer - 1])  # layers layer−1, …, source+1 come first
        size = self.input_dim if source == 0 else self.widths[source - 1]
        return slice(start, start + size)

    def forward(self, params: PyTree, x: Any) -> DenseForwardPass:
        c = inputs(x, self.input_dim)
        pre, post, concat = [], [], [c]
        for layer in params["layers"]:
            z = dense(c, layer["W"])
            a = self.activation(z)
            c = jnp.concatenate([a, c], axis=1)
            pre.append(z)
            post.append(a)
            concat.append(c)
        f = jnp.matmul(c, params["v"], precision=HIGHEST) / math.sqrt(c.shape[1])
        return DenseForwardPass(pre, post, concat, f)

    def apply(self, params: PyTree, x: Any) -> Array:
        """Network output, shape (n,)."""
        return self.forward(params, x).output


def densenet(
    key: Array,
    widths: int | Sequence[int],
    *,
    input_dim: int,
    activation: str | Activation = "tanh",
    dtype: Any = jnp.float32,
) -> tuple[DenseNet, PyTree]:
    """Initialize the DenseNet of Eq. (37): all weights N(0, 1).

    Args:
        key: PRNG key.
        widths: (m_1, …, m_L), the number of new neurons of each layer; an int means one layer.
        input_dim: d.
        activation: σ for every layer.
        dtype: parameter dtype.

    Returns:
        ``(model, params)``.
    """
    widths = V.int_tuple("widths", widths)
    input_dim = V.positive_int("input_dim", input_dim)
    dtype = V.float_dtype("dtype", dtype)
    model = DenseNet(widths=widths, activation=get_activation(activation), input_dim=input_dim)
    keys = jax.random.split(key, len(widths) + 1)
    layers = [{"W": normal(k, (m, model.fan_in(i)), dtype)}
              for i, (k, m) in enumerate(zip(keys[:-1], widths, strict=True), start=1)]
    v = normal(keys[-1], (model.fan_in(len(widths) + 1),), dtype)
    return model, {"layers": layers, "v": v}


__all__ = ["DenseForwardPass", "DenseNet", "densenet"]
