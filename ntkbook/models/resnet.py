"""Residual network with a linear output layer — Eq. 97 of Liu, Zhu & Belkin (2020), App. G.2 of the main
text (supp. Eq. 80, supp. App. H.2).

α⁽¹⁾ = σ(W⁽¹⁾x/√d),
α⁽ˡ⁾ = σ(α̃⁽ˡ⁾) + α⁽ˡ⁻¹⁾,  α̃⁽ˡ⁾ = W⁽ˡ⁾α⁽ˡ⁻¹⁾/√m,   l = 2, …, L,
f = vᵀα⁽ᴸ⁾/√m.

A skip connection at every layer (Remark H.1 of the paper), NTK parameterization, all weights
N(0, 1), every hidden layer of the same width m (the skip connection adds vectors of equal length).
Compared with the fully connected network of Eq. (22) the only change is the identity added to the
layer Jacobian: ∂α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾ = I + diag(σ'(α̃⁽ˡ⁾))W⁽ˡ⁾/√m; the second-derivative tensors of a layer
are those of the fully connected layer (the skip term is linear in α⁽ˡ⁻¹⁾ and free of W⁽ˡ⁾).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp

from .. import _validation as V
from ..activations import Activation, get_activation
from ..random import normal
from .common import HIGHEST, STATIC, Array, PyTree, dense, inputs, squeeze_output
from .dense import ForwardPass


@jax.tree_util.register_dataclass
@dataclass(frozen=True, eq=False)
class ResNet:
    """Fully connected residual network of Eq. 97 (main text, App. G.2; supp. Eq. 80).

    Trainable parameters ``{"layers": [{"W": (m, d)}, {"W": (m, m)}, ...], "v": (m, k)}`` (the same
    layout as :class:`~ntkbook.models.dense.MLP`); with a fixed output layer ``v`` lives on the model
    (``fixed_v``).  ``widths`` is ``(m,) * L`` so that code written for MLPs can read the widths.
    """

    fixed_v: Array | None
    widths: tuple[int, ...] = field(metadata=STATIC)
    activations: tuple[Activation, ...] = field(metadata=STATIC)
    input_dim: int = field(metadata=STATIC)
    output_dim: int = field(metadata=STATIC)

    @property
    def depth(self) -> int:
        return len(self.widths)

    @property
    def width(self) -> int:
        return self.widths[0]

    def forward(self, params: PyTree, x: Any) -> ForwardPass:
        """Run the network; ``pre`` holds α̃⁽ˡ⁾, ``post`` holds α⁽ˡ⁾ (with the skip term), l = 1..L."""
        a = inputs(x, self.input_dim)
        pre, post = [], [a]
        for i, (layer, act) in enumerate(zip(params["layers"], self.activations, strict=True)):
            z = dense(a, layer["W"])
            a = act(z) if i == 0 else act(z) + a
            pre.append(z)
            post.append(a)
        v = self.fixed_v if self.fixed_v is not None else params["v"]
        f = jnp.matmul(a, v, precision=HIGHEST) / math.sqrt(self.widths[-1])
        return ForwardPass(pre, post, squeeze_output(f))

    def apply(self, params: PyTree, x: Any) -> Array:
        """Network output, (n,) for one output, (n, k) for k > 1."""
        return self.forward(params, x).output


def resnet(
    key: Array,
    width: int,
    depth: int,
    *,
    input_dim: int = 1,
    output_dim: int = 1,
    activation: str | Activation = "tanh",
    train_output: bool = True,
    dtype: Any = jnp.float32,
) -> tuple[ResNet, PyTree]:
    """Initialize the residual network of Eq. (97) (supp. Eq. 80): all weights N(0, 1) (NTK parameterization).

    Args:
        key: PRNG key.
        width: m, the width of every hidden layer.
        depth: L ≥ 1, the number of hidden layers (layers 2..L carry a skip connection).
        input_dim: d.
        output_dim: k.
        activation: the activation σ of every layer.
        train_output: if False, v is fixed (stored on the model).
        dtype: parameter dtype.

    Returns:
        ``(model, params)``.
    """
    width = V.positive_int("width", width)
    depth = V.positive_int("depth", depth)
    input_dim = V.positive_int("input_dim", input_dim)
    output_dim = V.positive_int("output_dim", output_dim)
    dtype = V.float_dtype("dtype", dtype)
    act = get_activation(activation)
    keys = jax.random.split(key, depth + 1)
    layers, fan_in = [], input_dim
    for k in keys[:-1]:
        layers.append({"W": normal(k, (width, fan_in), dtype)})
        fan_in = width
    v = normal(keys[-1], (width, output_dim), dtype)
    params: dict[str, Any] = {"layers": layers}
    if train_output:
        params["v"] = v
    model = ResNet(fixed_v=None if train_output else v, widths=(width,) * depth, activations=(act,) * depth,
                   input_dim=input_dim, output_dim=output_dim)
    return model, params


__all__ = ["ResNet", "resnet"]
