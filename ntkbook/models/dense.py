"""Fully connected NTK-parameterized models: Eq. (8), Eq. (19)/(22), and random features.

The NTK parameterization (Section 3.3 of Liu, Zhu & Belkin 2020): every weight is drawn from
N(0, 1) and every layer divides by the square root of its fan-in,
α̃⁽ˡ⁾ = W⁽ˡ⁾ α⁽ˡ⁻¹⁾ / √m_{l−1},  α⁽ˡ⁾ = σ(α̃⁽ˡ⁾),  f = vᵀ α⁽ᴸ⁾ / √m_L      (Eq. 19 and 22),
with m₀ = d for the first layer (for d = 1 this is exactly Eq. 8 and Eq. 16).

``parameterization="lecun"`` (Appendix A of the paper, Eq. 39): every weight of a layer with fan-in
m_{l−1} is drawn from N(0, 1/m_{l−1}) and the forward pass has no 1/√fan-in factor,
α̃⁽ˡ⁾ = W̄⁽ˡ⁾ α⁽ˡ⁻¹⁾.  With W̄⁽ˡ⁾ = W⁽ˡ⁾/√m_{l−1} both parameterizations compute the same function;
only the coordinates (and therefore gradients, kernels, Hessians and gradient descent) differ.
Biases are N(0, 1) and unscaled in both.

The parameterization is a static field of :class:`ShallowNetwork` and :class:`MLP` (part of the pytree's
auxiliary data): an NTK and a LeCun network of the same widths have different tree structures, so no
compiled function is ever shared between them.
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
from .common import HIGHEST, STATIC, Array, PyTree, dense, inputs, squeeze_output

PARAMETERIZATIONS = ("ntk", "lecun")
"""``"ntk"``: weights N(0, 1), 1/√fan-in in the forward pass (the paper's default);
``"lecun"``: weights N(0, 1/fan-in), no factor in the forward pass (Appendix A, Eq. 39)."""


def _layer(a: Array, w: Array, parameterization: str) -> Array:
    """a @ wᵀ, divided by √fan_in in the NTK parameterization only (full float32 precision)."""
    if parameterization == "ntk":
        return dense(a, w)
    return jnp.matmul(a, w.T, precision=HIGHEST)


def _init_std(fan_in: int, parameterization: str) -> float:
    """Standard deviation of an initial weight with this fan-in: 1 (NTK) or 1/√fan_in (LeCun)."""
    return 1.0 if parameterization == "ntk" else 1.0 / math.sqrt(fan_in)

# ---------------------------------------------------------------------------------------------
# One hidden layer, Eq. (8)
# ---------------------------------------------------------------------------------------------


@jax.tree_util.register_dataclass
@dataclass(frozen=True, eq=False)
class ShallowNetwork:
    """f(w; x) = (1/√m) Σᵢ vᵢ σ(wᵢᵀx / √d) — Eq. (8) of Liu, Zhu & Belkin (2020).

    Trainable parameters ``{"w": (m, d)}``; the output weights ``v ∈ {±1}^m`` are fixed (a leaf of
    the model, not of ``params``).  Its Hessian in w is diagonal (Eq. 9):
    H_ii = vᵢ σ''(wᵢx) x² / √m for d = 1.

    With ``parameterization="lecun"`` (Appendix A, Eq. 39) the same network in LeCun coordinates:
    f(w̄; x) = Σᵢ v̄ᵢ σ(w̄ᵢᵀx), w̄ᵢ ~ N(0, I/d) trainable, v̄ᵢ ∈ {±1/√m} fixed — the same function at
    w = √d·w̄ (and v = √m·v̄); gradients are √d times larger, Hessians d times larger (Eq. 36–37 with
    σ_m = 1/√d).  The parameterization is static data of the pytree: an NTK and a LeCun network never
    share a tree structure, hence never a compiled function.
    """

    v: Array
    activation: Activation = field(metadata=STATIC)
    input_dim: int = field(metadata=STATIC)
    parameterization: str = field(default="ntk", metadata=STATIC)

    def __post_init__(self) -> None:
        V.choice("parameterization", self.parameterization, PARAMETERIZATIONS)

    @property
    def width(self) -> int:
        return int(self.v.shape[0])

    def hidden(self, params: PyTree, x: Any) -> Array:
        """Hidden-layer values α(x) = σ(w x / √d) (NTK) or σ(w̄ x) (LeCun), shape (n, m)."""
        return self.activation(_layer(inputs(x, self.input_dim), params["w"], self.parameterization))

    def apply(self, params: PyTree, x: Any) -> Array:
        """Network output, shape (n,)."""
        out = jnp.matmul(self.hidden(params, x), self.v, precision=HIGHEST)
        return out / math.sqrt(self.width) if self.parameterization == "ntk" else out


def shallow_network(
    key: Array,
    width: int,
    *,
    input_dim: int = 1,
    activation: str | Activation = "tanh",
    dtype: Any = jnp.float32,
    parameterization: str = "ntk",
) -> tuple[ShallowNetwork, PyTree]:
    """Initialize the network of Eq. (8): wᵢ ~ N(0, 1) (trainable), vᵢ uniform on {±1} (fixed).

    With ``parameterization="lecun"`` the same random draws are rescaled to the LeCun
    coordinates: w̄ = w/√d, v̄ = v/√m (so both models compute the same function at initialization
    for the same key).

    Returns:
        ``(model, params)`` with ``params = {"w": (width, input_dim)}``.
    """
    width = V.positive_int("width", width)
    input_dim = V.positive_int("input_dim", input_dim)
    dtype = V.float_dtype("dtype", dtype)
    parameterization = V.choice("parameterization", parameterization, PARAMETERIZATIONS)
    act = get_activation(activation)
    k_w, k_v = jax.random.split(key)
    w = normal(k_w, (width, input_dim), dtype, scale=_init_std(input_dim, parameterization))
    v = jax.random.rademacher(k_v, (width,), dtype) * _init_std(width, parameterization)
    return ShallowNetwork(v=v, activation=act, input_dim=input_dim, parameterization=parameterization), {"w": w}


# ---------------------------------------------------------------------------------------------
# Fully connected networks of depth L, Eq. (19) and (22)
# ---------------------------------------------------------------------------------------------


class ForwardPass(NamedTuple):
    """All intermediate values of an :class:`MLP` on a batch.

    Attributes:
        pre: pre-activations α̃⁽ˡ⁾, l = 1..L, each (n, m_l).
        post: activations α⁽ˡ⁾, l = 0..L, each (n, m_l); ``post[0]`` is the input x.
        output: f, (n,) or (n, k).
    """

    pre: list[Array]
    post: list[Array]
    output: Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True, eq=False)
class MLP:
    """Fully connected network with a linear output layer, Eq. (19)/(22).

    α⁽⁰⁾ = x,  α̃⁽ˡ⁾ = W⁽ˡ⁾α⁽ˡ⁻¹⁾/√m_{l−1} (+ b⁽ˡ⁾),  α⁽ˡ⁾ = σ_l(α̃⁽ˡ⁾),  f = vᵀα⁽ᴸ⁾/√m_L.

    Trainable parameters ``{"layers": [{"W": (m_l, m_{l−1}), "b": (m_l,)?}, ...], "v": (m_L, k)}``;
    when the output layer is fixed, ``v`` lives on the model instead (``fixed_v``) and is absent from
    ``params``.  Each hidden layer may have its own activation (e.g. the identity bottleneck of
    Eq. 31).

    With ``parameterization="lecun"`` (Appendix A, Eq. 39): α̃⁽ˡ⁾ = W̄⁽ˡ⁾α⁽ˡ⁻¹⁾ (+ b⁽ˡ⁾), f = v̄ᵀα⁽ᴸ⁾,
    W̄⁽ˡ⁾ ~ N(0, 1/m_{l−1}), v̄ ~ N(0, 1/m_L) — the same parameter layout, and the same function at
    W⁽ˡ⁾ = √m_{l−1}·W̄⁽ˡ⁾, v = √m_L·v̄.  The parameterization is static data of the pytree, so models
    that compute different functions never share a tree structure or a compiled function.
    """

    fixed_v: Array | None
    widths: tuple[int, ...] = field(metadata=STATIC)
    activations: tuple[Activation, ...] = field(metadata=STATIC)
    input_dim: int = field(metadata=STATIC)
    output_dim: int = field(metadata=STATIC)
    use_bias: bool = field(metadata=STATIC)
    parameterization: str = field(default="ntk", metadata=STATIC)

    def __post_init__(self) -> None:
        V.choice("parameterization", self.parameterization, PARAMETERIZATIONS)

    @property
    def depth(self) -> int:
        return len(self.widths)

    def forward(self, params: PyTree, x: Any) -> ForwardPass:
        """Run the network and keep every pre-activation and activation."""
        a = inputs(x, self.input_dim)
        pre, post = [], [a]
        for layer, act in zip(params["layers"], self.activations, strict=True):
            z = _layer(a, layer["W"], self.parameterization)
            if self.use_bias:
                z = z + layer["b"]
            a = act(z)
            pre.append(z)
            post.append(a)
        v = self.fixed_v if self.fixed_v is not None else params["v"]
        f = jnp.matmul(a, v, precision=HIGHEST)
        if self.parameterization == "ntk":
            f = f / math.sqrt(self.widths[-1])
        return ForwardPass(pre, post, squeeze_output(f))

    def apply(self, params: PyTree, x: Any) -> Array:
        """Network output, (n,) for one output, (n, k) for k > 1."""
        return self.forward(params, x).output


def mlp(
    key: Array,
    widths: int | Sequence[int],
    *,
    input_dim: int = 1,
    output_dim: int = 1,
    activation: str | Activation | Sequence[str | Activation] = "tanh",
    use_bias: bool = False,
    train_output: bool = True,
    dtype: Any = jnp.float32,
    parameterization: str = "ntk",
) -> tuple[MLP, PyTree]:
    """Initialize a fully connected network, NTK-parameterized by default (all weights N(0, 1)).

    Args:
        key: PRNG key.
        widths: hidden-layer widths (m_1, ..., m_L); an int means one hidden layer.
        input_dim: d.
        output_dim: k (the output has shape (n,) when k = 1).
        activation: one activation for every hidden layer, or one per layer.
        use_bias: add b⁽ˡ⁾ ~ N(0, 1) to every pre-activation.
        train_output: if False the output weights are fixed (stored on the model).
        dtype: parameter dtype (float64 needs ``jax_enable_x64``).
        parameterization: ``"ntk"`` (default) or ``"lecun"`` — weights N(0, 1/fan-in) and no
            1/√fan-in factor in the forward pass (Appendix A, Eq. 39).  For the same key the two
            draw the same standard normals, rescaled: W̄⁽ˡ⁾ = W⁽ˡ⁾/√m_{l−1}, v̄ = v/√m_L, so they
            compute the same function at initialization.

    Returns:
        ``(model, params)``.
    """
    widths = V.int_tuple("widths", widths)
    input_dim = V.positive_int("input_dim", input_dim)
    output_dim = V.positive_int("output_dim", output_dim)
    dtype = V.float_dtype("dtype", dtype)
    parameterization = V.choice("parameterization", parameterization, PARAMETERIZATIONS)
    if isinstance(activation, (str, Activation)):
        acts = tuple(get_activation(activation) for _ in widths)
    else:
        acts = tuple(get_activation(a) for a in activation)
        if len(acts) != len(widths):
            raise ValueError(f"activation: got {len(acts)} activations for {len(widths)} hidden layers")
    keys = jax.random.split(key, len(widths) + 1)
    layers, fan_in = [], input_dim
    for k, m in zip(keys[:-1], widths, strict=True):
        kw, kb = jax.random.split(k)
        layer = {"W": normal(kw, (m, fan_in), dtype, scale=_init_std(fan_in, parameterization))}
        if use_bias:
            layer["b"] = normal(kb, (m,), dtype)
        layers.append(layer)
        fan_in = m
    v = normal(keys[-1], (widths[-1], output_dim), dtype, scale=_init_std(widths[-1], parameterization))
    params: dict[str, Any] = {"layers": layers}
    if train_output:
        params["v"] = v
    model = MLP(
        fixed_v=None if train_output else v,
        widths=widths,
        activations=acts,
        input_dim=input_dim,
        output_dim=output_dim,
        use_bias=bool(use_bias),
        parameterization=parameterization,
    )
    return model, params


# ---------------------------------------------------------------------------------------------
# Models that are linear in their parameters
# ---------------------------------------------------------------------------------------------


@jax.tree_util.register_dataclass
@dataclass(frozen=True, eq=False)
class RandomFeatures:
    """f(w; x) = wᵀφ(x) + f₀(x) with a fixed non-linear feature map (Proposition 2.2's form).

    φ(x) = σ(U x / √d) / √M with fixed U ∈ ℝ^{M×d}, and f₀(x) = cᵀσ(U x / √d)/√M with fixed c.
    Linear in w, non-linear in x: its tangent kernel K(x, z) = φ(x)ᵀφ(z) does not depend on w.
    Trainable parameters ``{"w": (M,)}``.
    """

    U: Array
    c: Array
    activation: Activation = field(metadata=STATIC)

    @property
    def num_features(self) -> int:
        return int(self.U.shape[0])

    def features(self, x: Any) -> Array:
        """φ(x), shape (n, M)."""
        x = inputs(x, int(self.U.shape[1]))
        return self.activation(dense(x, self.U)) / math.sqrt(self.num_features)

    def apply(self, params: PyTree, x: Any) -> Array:
        phi = self.features(x)
        return jnp.matmul(phi, params["w"] + self.c, precision=HIGHEST)


def random_features(
    key: Array,
    num_features: int,
    *,
    input_dim: int = 1,
    activation: str | Activation = "tanh",
    dtype: Any = jnp.float32,
) -> tuple[RandomFeatures, PyTree]:
    """A random-features model; U, c, w all N(0, 1).  Returns ``(model, params)``."""
    num_features = V.positive_int("num_features", num_features)
    input_dim = V.positive_int("input_dim", input_dim)
    dtype = V.float_dtype("dtype", dtype)
    k_u, k_c, k_w = jax.random.split(key, 3)
    model = RandomFeatures(
        U=normal(k_u, (num_features, input_dim), dtype),
        c=normal(k_c, (num_features,), dtype),
        activation=get_activation(activation),
    )
    return model, {"w": normal(k_w, (num_features,), dtype)}


