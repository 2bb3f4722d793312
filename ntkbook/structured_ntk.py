"""Tangent kernels of dense networks from their layer structure — no Jacobian is ever formed.

For the fully connected network of Eq. (19)/(22), with pre-activations z⁽ˡ⁾ = W⁽ˡ⁾α⁽ˡ⁻¹⁾/√m_{l−1} + b⁽ˡ⁾,
the gradient of output c with respect to W⁽ˡ⁾ is the outer product δ⁽ˡ⁾_c α⁽ˡ⁻¹⁾ᵀ/√m_{l−1}, where
δ⁽ˡ⁾_c = ∂f_c/∂z⁽ˡ⁾ is the backward signal.  Inner products of outer products factor, so

K[i, j, a, b] = Σ_l ⟨δ⁽ˡ⁾_a(x_i), δ⁽ˡ⁾_b(x'_j)⟩ · ( ⟨α⁽ˡ⁻¹⁾(x_i), α⁽ˡ⁻¹⁾(x'_j)⟩ / m_{l−1} + 1[bias] )
              + 1{a = b} · ⟨α⁽ᴸ⁾(x_i), α⁽ᴸ⁾(x'_j)⟩ / m_L          (trainable output layer v)

(cf. the "structured derivatives" of Novak et al. 2022).  The cost is one forward pass, one backward
pass per output, and Σ_l n₁n₂k²m_l for the products — against (n₁+n₂)kP for the Jacobians.

A non-linear output f̃ = φ(f) (Eq. 26) multiplies by the output Jacobian: K̃ = J_φ(x) K J_φ(x')ᵀ
for each pair of inputs, with J_φ = diag(φ'(f)) elementwise or diag(p) − ppᵀ for the softmax.

Supported models: :class:`~ntkbook.models.dense.ShallowNetwork`, :class:`~ntkbook.models.dense.MLP` (any widths,
per-layer activations, bias, trainable or fixed output — bottleneck networks included — in the NTK or the
LeCun parameterization, whose layers drop the 1/√fan-in factors),
:class:`~ntkbook.models.dense.RandomFeatures`, and :class:`~ntkbook.models.wrappers.NonLinearOutput` around any of
them.  :func:`supports` tells whether an ``apply_fn`` is one of these models' ``apply``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from .models import MLP, NonLinearOutput, RandomFeatures, ShallowNetwork
from .models.common import HIGHEST, inputs

Array = jax.Array
PyTree = Any

SUPPORTED = (MLP, ShallowNetwork, RandomFeatures, NonLinearOutput)


def model_of(apply_fn: Callable) -> Any | None:
    """The model whose ``apply`` method ``apply_fn`` is, if it is a supported one; else None."""
    model = getattr(apply_fn, "__self__", None)
    func = getattr(apply_fn, "__func__", None)
    if model is None or func is None or not isinstance(model, SUPPORTED) or func is not type(model).apply:
        return None
    if isinstance(model, NonLinearOutput):
        base = model.base
        if not isinstance(base, SUPPORTED) or isinstance(base, NonLinearOutput):
            return None
    return model


def output_dim(model: Any) -> int:
    """k, the number of outputs of a supported model."""
    base = model.base if isinstance(model, NonLinearOutput) else model
    return int(base.output_dim) if isinstance(base, MLP) else 1


def supports(apply_fn: Callable) -> bool:
    """True when :func:`structured_ntk` can compute the kernel of ``apply_fn``."""
    return model_of(apply_fn) is not None


def _einsum(spec: str, *ops: Array) -> Array:
    return jnp.einsum(spec, *ops, precision=HIGHEST)


def _inv_sqrt_fan_in(model: Any, fan_in: int) -> float:
    """The factor 1/√fan_in of a layer in the NTK parameterization; 1 in the LeCun one (Eq. 39)."""
    return 1.0 / math.sqrt(fan_in) if model.parameterization == "ntk" else 1.0


def _mlp_terms(model: MLP, params: PyTree, x: Array) -> tuple[list[Array], list[Array], Array, Array]:
    """Forward activations α⁽ˡ⁻¹⁾ (n, m_{l−1}), backward signals δ⁽ˡ⁾ (n, k, m_l), α⁽ᴸ⁾, and f (n, k)."""
    fp = model.forward(params, x)
    v = model.fixed_v if model.fixed_v is not None else params["v"]
    m_last = model.widths[-1]
    deltas = [None] * model.depth
    # δ⁽ᴸ⁾_c = v[:, c] / √m_L ⊙ σ_L'(z⁽ᴸ⁾)
    d = (v.T * _inv_sqrt_fan_in(model, m_last))[None, :, :] * model.activations[-1].derivative(fp.pre[-1])[:, None, :]
    deltas[-1] = d
    for layer in range(model.depth - 2, -1, -1):
        w_next = params["layers"][layer + 1]["W"]  # (m_{l+1}, m_l)
        back = jnp.matmul(d, w_next, precision=HIGHEST) * _inv_sqrt_fan_in(model, w_next.shape[1])  # (n, k, m_l)
        d = back * model.activations[layer].derivative(fp.pre[layer])[:, None, :]
        deltas[layer] = d
    f = fp.output[:, None] if fp.output.ndim == 1 else fp.output
    return fp.post[:-1], deltas, fp.post[-1], f


def _kernel_mlp(model: MLP, params: PyTree, x1: Array, x2: Array | None) -> Array:
    a1, d1, last1, _ = _mlp_terms(model, params, x1)
    a2, d2, last2, _ = (a1, d1, last1, None) if x2 is None else _mlp_terms(model, params, x2)
    k = d1[0].shape[1]
    kernel = jnp.zeros((x1.shape[0], a2[0].shape[0], k, k), d1[0].dtype)
    for l_idx in range(model.depth):
        fan_in = a1[l_idx].shape[1]
        gram = _einsum("im,jm->ij", a1[l_idx], a2[l_idx]) * _inv_sqrt_fan_in(model, fan_in) ** 2
        if model.use_bias:
            gram = gram + 1.0
        kernel = kernel + _einsum("iam,jbm->ijab", d1[l_idx], d2[l_idx]) * gram[:, :, None, None]
    if model.fixed_v is None:
        out = _einsum("im,jm->ij", last1, last2) * _inv_sqrt_fan_in(model, model.widths[-1]) ** 2
        kernel = kernel + out[:, :, None, None] * jnp.eye(k, dtype=kernel.dtype)
    return kernel


def _kernel_shallow(model: ShallowNetwork, params: PyTree, x1: Array, x2: Array | None) -> Array:
    def delta(x: Array) -> Array:
        z = jnp.matmul(x, params["w"].T, precision=HIGHEST) * _inv_sqrt_fan_in(model, model.input_dim)
        return model.v[None, :] * _inv_sqrt_fan_in(model, model.width) * model.activation.derivative(z)

    x2_ = x1 if x2 is None else x2
    d1 = delta(x1)
    d2 = d1 if x2 is None else delta(x2)
    gram = _einsum("id,jd->ij", x1, x2_) * _inv_sqrt_fan_in(model, model.input_dim) ** 2
    return (_einsum("im,jm->ij", d1, d2) * gram)[:, :, None, None]


def _kernel_random_features(model: RandomFeatures, params: PyTree, x1: Array, x2: Array | None) -> Array:
    phi1 = model.features(x1)
    phi2 = phi1 if x2 is None else model.features(x2)
    return _einsum("im,jm->ij", phi1, phi2)[:, :, None, None]


def _output_jacobian(model: NonLinearOutput, f: Array) -> Array:
    """J_φ(f) per input: (n, k, k)."""
    if model.phi == "softmax":
        p = jax.nn.softmax(f, axis=-1)
        return jax.vmap(jnp.diag)(p) - p[:, :, None] * p[:, None, :]
    return jax.vmap(jnp.diag)(model.phi.derivative(f))


def _base_kernel(model: Any, params: PyTree, x1: Array, x2: Array | None) -> Array:
    """x2 = None means x2 = x1 (each per-input quantity is then computed once)."""
    if isinstance(model, MLP):
        return _kernel_mlp(model, params, x1, x2)
    if isinstance(model, ShallowNetwork):
        return _kernel_shallow(model, params, x1, x2)
    return _kernel_random_features(model, params, x1, x2)


@jax.jit
def _structured(model: Any, params: PyTree, x1: Array, x2: Array | None) -> Array:
    if isinstance(model, NonLinearOutput):
        base = model.base
        kernel = _base_kernel(base, params, x1, x2)

        def output_jacobian(x: Array) -> Array:
            f = base.apply(params, x)
            return _output_jacobian(model, f[:, None] if f.ndim == 1 else f)

        j1 = output_jacobian(x1)
        j2 = j1 if x2 is None else output_jacobian(x2)
        return _einsum("iac,ijcd,jbd->ijab", j1, kernel, j2)
    return _base_kernel(model, params, x1, x2)


def structured_ntk(model: Any, params: PyTree, x1: Array, x2: Array | None = None) -> Array:
    """The (n1, n2, k, k) tangent kernel of a supported model, from its layer structure.

    ``x2=None`` means x2 = x1 (per-input quantities are then computed once).  Use
    :func:`ntkbook.empirical_ntk` with ``method="structured"`` (or ``"auto"``) rather than calling
    this directly.
    """
    base = model.base if isinstance(model, NonLinearOutput) else model
    d = base.input_dim if hasattr(base, "input_dim") else int(base.U.shape[1])
    return _structured(model, params, inputs(x1, d), None if x2 is None else inputs(x2, d))
