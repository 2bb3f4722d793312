"""Convolutional networks whose width is the channel count — Section 3.3.3 and Eq. 90–93 of Liu, Zhu &
Belkin (2020), App. G.1 of the main text (supp. Eq. 73–76, supp. App. H.1).

A convolutional layer maps an "image" α⁽ˡ⁻¹⁾ ∈ ℝ^{Q × m_{l−1}} (Q pixels in a fixed spatial grid,
m_{l−1} channels) to α⁽ˡ⁾ ∈ ℝ^{Q × m_l}:

α̃⁽ˡ⁾ = W⁽ˡ⁾ ∗ α⁽ˡ⁻¹⁾ / √(K m_{l−1}),   α⁽ˡ⁾ = σ(α̃⁽ˡ⁾),
(W ∗ α)_{q,i} = Σ_{k ∈ kernel} Σ_j W_{k,j,i} α_{q+k−c, j}   (Eq. 91; supp. Eq. 74; zeros outside),

with K the number of kernel positions (e.g. 3 × 3 = 9) and c the kernel centre ("same" padding, stride
1).  The output layer is linear in the last hidden image, f = vᵀ vec(α⁽ᴸ⁾)/√(Q m_L), as in Eq. (19).
All weights are N(0, 1) (NTK parameterization).  The layer is fully connected in the channel
dimension and sparse only in the fixed spatial dimensions, which is why the width m (channels) plays
the role of the width of a fully connected network: Eq. (76) writes W ∗ α = Σ_k W^{[k]} α^{[k]}, a
sum of K matrix products with shifted copies α^{[k]} of the input.

The paper divides by √m_l; we divide by the fan-in √(K m_{l−1}), the usual NTK convention — the two
differ by the constant √K (and m_{l−1} = m_l inside the network), which changes no rate in m.
Spatial dimension 1 (signals) or 2 (images) — any number of spatial dimensions works.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp

from .. import _validation as V
from ..activations import Activation, get_activation
from ..random import normal
from .common import HIGHEST, STATIC, Array, PyTree, squeeze_output
from .dense import ForwardPass

_SPATIAL_NAMES = "HWDTUVXYZ"


def _dimension_numbers(ndim: int) -> tuple[str, str, str]:
    s = _SPATIAL_NAMES[:ndim]
    return f"N{s}C", f"{s}IO", f"N{s}C"


def conv(a: Array, w: Array) -> Array:
    """W ∗ α / √(K m_in) with "same" zero padding and stride 1 (Eq. 90–91 of the main text, supp. Eq. 73–74).

    Args:
        a: ``(n, *spatial, m_in)`` images.
        w: ``(*kernel, m_in, m_out)`` filters.

    Returns:
        ``(n, *spatial, m_out)``.
    """
    nd = w.ndim - 2
    fan_in = math.prod(w.shape[:-1])
    out = jax.lax.conv_general_dilated(a, w, window_strides=(1,) * nd, padding="SAME",
                                       dimension_numbers=_dimension_numbers(nd), precision=HIGHEST)
    return out / math.sqrt(fan_in)


@jax.tree_util.register_dataclass
@dataclass(frozen=True, eq=False)
class ConvNet:
    """A CNN of the form Eq. (19) with convolutional layers Eq. (73) and a linear output layer.

    Trainable parameters ``{"layers": [{"W": (*kernel, m_{l−1}, m_l)}, ...], "v": (Q·m_L, k)}``
    (``v`` on the model as ``fixed_v`` when the output layer is fixed).  Inputs ``x`` have shape
    ``(n, *spatial, c)``, or ``(n, *spatial)`` when there is one input channel.
    """

    fixed_v: Array | None
    widths: tuple[int, ...] = field(metadata=STATIC)
    activations: tuple[Activation, ...] = field(metadata=STATIC)
    spatial: tuple[int, ...] = field(metadata=STATIC)
    kernel_size: tuple[int, ...] = field(metadata=STATIC)
    input_channels: int = field(metadata=STATIC)
    output_dim: int = field(metadata=STATIC)

    @property
    def depth(self) -> int:
        return len(self.widths)

    @property
    def pixels(self) -> int:
        """Q, the number of positions of the fixed spatial grid."""
        return math.prod(self.spatial)

    def images(self, x: Any) -> Array:
        """Validate inputs and return them as ``(n, *spatial, c)``."""
        x = V.array("x", x)
        if x.ndim == len(self.spatial) + 1 and self.input_channels == 1:
            x = x[..., None]
        want = (*self.spatial, self.input_channels)
        if x.ndim != len(want) + 1 or tuple(x.shape[1:]) != want:
            raise ValueError(f"x must have shape (n, {', '.join(map(str, want))}); got {tuple(x.shape)}")
        return x

    def forward(self, params: PyTree, x: Any) -> ForwardPass:
        """Run the network; ``pre``/``post`` hold the ``(n, *spatial, m_l)`` images, ``post[0]`` the input."""
        a = self.images(x)
        pre, post = [], [a]
        for layer, act in zip(params["layers"], self.activations, strict=True):
            z = conv(a, layer["W"])
            a = act(z)
            pre.append(z)
            post.append(a)
        v = self.fixed_v if self.fixed_v is not None else params["v"]
        flat = a.reshape(a.shape[0], -1)
        f = jnp.matmul(flat, v, precision=HIGHEST) / math.sqrt(flat.shape[1])
        return ForwardPass(pre, post, squeeze_output(f))

    def apply(self, params: PyTree, x: Any) -> Array:
        """Network output, (n,) for one output, (n, k) for k > 1."""
        return self.forward(params, x).output


def conv_net(
    key: Array,
    channels: int | Sequence[int],
    *,
    spatial: int | Sequence[int] = (8, 8),
    kernel_size: int | Sequence[int] = 3,
    input_channels: int = 1,
    output_dim: int = 1,
    activation: str | Activation | Sequence[str | Activation] = "tanh",
    train_output: bool = True,
    dtype: Any = jnp.float32,
) -> tuple[ConvNet, PyTree]:
    """Initialize a CNN (all weights N(0, 1)) whose hidden layers have ``channels`` channels.

    Args:
        key: PRNG key.
        channels: (m_1, ..., m_L), the width of each convolutional layer (an int: one layer).
        spatial: the input grid, e.g. ``(8, 8)`` for 8 × 8 images or ``(16,)`` for signals.
        kernel_size: odd filter size per spatial dimension (an int: the same in every dimension).
        input_channels: c, the channels of the input.
        output_dim: k.
        activation: one activation for every layer, or one per layer.
        train_output: if False, v is fixed (stored on the model).
        dtype: parameter dtype.

    Returns:
        ``(model, params)``.
    """
    widths = V.int_tuple("channels", channels)
    spatial = V.int_tuple("spatial", spatial)
    if isinstance(kernel_size, int) and not isinstance(kernel_size, bool):
        kernel_size = (kernel_size,) * len(spatial)
    kernel = V.int_tuple("kernel_size", kernel_size)
    if len(kernel) != len(spatial):
        raise ValueError(f"kernel_size must have one entry per spatial dimension ({len(spatial)}), got {kernel}")
    if any(k % 2 == 0 for k in kernel):
        raise ValueError(f"kernel_size must be odd (centred filters, Eq. 91), got {kernel}")
    if len(spatial) > len(_SPATIAL_NAMES):
        raise ValueError(f"spatial: at most {len(_SPATIAL_NAMES)} spatial dimensions, got {len(spatial)}")
    input_channels = V.positive_int("input_channels", input_channels)
    output_dim = V.positive_int("output_dim", output_dim)
    dtype = V.float_dtype("dtype", dtype)
    if isinstance(activation, (str, Activation)):
        acts = tuple(get_activation(activation) for _ in widths)
    else:
        acts = tuple(get_activation(a) for a in activation)
        if len(acts) != len(widths):
            raise ValueError(f"activation: got {len(acts)} activations for {len(widths)} layers")
    keys = jax.random.split(key, len(widths) + 1)
    layers, fan_in = [], input_channels
    for k, m in zip(keys[:-1], widths, strict=True):
        layers.append({"W": normal(k, (*kernel, fan_in, m), dtype)})
        fan_in = m
    v = normal(keys[-1], (math.prod(spatial) * widths[-1], output_dim), dtype)
    params: dict[str, Any] = {"layers": layers}
    if train_output:
        params["v"] = v
    model = ConvNet(fixed_v=None if train_output else v, widths=widths, activations=acts, spatial=spatial,
                    kernel_size=kernel, input_channels=input_channels, output_dim=output_dim)
    return model, params


__all__ = ["ConvNet", "conv", "conv_net"]
